#!/usr/bin/env bash
# Installs the Debian packages, builds Morph (and installs it under build/demo/prefix),
# then runs its main job on the embedded default: a real local Slurm cluster with
# emulated heterogeneous GPU nodes (2 x 8 A100-80GB, 2 x 4 V100-32GB), where users submit
# by naming the model and the batch, Morph sizes the jobs and picks their plans, and a
# job is replanned through checkpoint, requeue and release. Ends with the performance
# model checked against the Morphling artifact when ../shared/data is beside the checkout.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

morph_install_deps
morph_bootstrap
build="$MORPH_TOP/build/demo"
prefix="$build/prefix"
morph_build "$build" --prefix="$prefix"
make -C "$build" install >/dev/null
morph="$prefix/bin/morph"

morph_log "morph plan --model llama2-7b --batch 512 --gpus 2x8xa100"
"$morph" plan --model llama2-7b --batch 512 --gpus 2x8xa100 --top 5

if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null; then
  morph_log "the local Slurm cluster needs root and Slurm: skipped"
else
  export MORPH_TESTCLUSTER_DIR=/tmp/morph-demo-cluster
  trap '"$build/tests/cluster/testcluster" down >/dev/null 2>&1 || true' EXIT
  morph_log "tests/cluster/testcluster up"
  up=$("$build/tests/cluster/testcluster" up)
  export SLURM_CONF=${up##*SLURM_CONF=}
  sinfo -N -o '%N %T %G %c %m'
  jobs=$MORPH_TESTCLUSTER_DIR/jobs
  install -d -m 1777 "$jobs"
  cat >"$jobs/train.sh" <<'EOF'
#!/bin/bash
# A stand-in trainer: it reads its plan from the environment, as morphrun will.
if [ -n "${HOLD_FIRST_RUN:-}" ] && [ -z "${SLURM_RESTART_COUNT:-}" ]; then sleep 600; fi
echo "job $SLURM_JOB_ID (restart ${SLURM_RESTART_COUNT:-0}) on $SLURM_JOB_NUM_NODES node(s), GPUs $CUDA_VISIBLE_DEVICES"
echo "train $MORPH_MODEL: global batch $MORPH_GLOBAL_BATCH, plan $MORPH_PLAN on $MORPH_GPU_TYPE"
EOF
  chmod 755 "$jobs/train.sh"
  wait_done() { while squeue -h -j "$1" 2>/dev/null | grep -q .; do sleep 1; done; }

  morph_log "plan-agnostic submissions: the model and the batch, no GPUs, no plan"
  ids=()
  for args in "--morph-model=gpt2-1.5b --morph-batch=16" \
              "--morph-model=llama2-7b --morph-batch=512" \
              "--morph-model=bert-336m --morph-batch=64 --morph-gpu-type=v100-32g --morph-gpus=2-4"; do
    echo "\$ sbatch $args train.sh"
    # shellcheck disable=SC2086
    ids+=("$(sbatch --parsable -D "$jobs" -o "$jobs/%j.out" $args "$jobs/train.sh")")
  done
  echo "\$ sbatch --morph-model=gpt3-175b --morph-batch=64 train.sh"
  sbatch -D "$jobs" --morph-model=gpt3-175b --morph-batch=64 "$jobs/train.sh" || true
  echo "\$ sbatch --morph-model=gpt2 --morph-batch=-3 train.sh"
  sbatch -D "$jobs" --morph-model=gpt2 --morph-batch=-3 "$jobs/train.sh" || true
  for id in "${ids[@]}"; do wait_done "$id"; cat "$jobs/$id.out"; done

  morph_log "replanning a running job: checkpoint, requeue-hold, new plan, release"
  id=$(HOLD_FIRST_RUN=1 sbatch --parsable --requeue --export=ALL,HOLD_FIRST_RUN=1 -D "$jobs" -o "$jobs/%j.out" \
       --morph-model=gpt2-1.5b --morph-batch=16 "$jobs/train.sh")
  while [ "$(squeue -h -j "$id" -o %T)" != RUNNING ]; do sleep 0.5; done
  echo "job $id runs with: $(scontrol show job "$id" | sed -n 's/.*AdminComment=.* type=\([^ ]*\) nodes=\([0-9]*\) gpus_per_node=\([0-9]*\).* dp=\([0-9]*\).*/\2 x \3 \1, dp=\4/p')"
  scontrol requeuehold "$id"
  record=$(scontrol show job "$id" | sed -n 's/^ *AdminComment=//p')
  ga=$(tr ' ' '\n' <<<"$record" | sed -n 's/^ga=//p')
  scontrol update job="$id" AdminComment="$(sed "s/gpus_per_node=1 /gpus_per_node=2 /; s/ dp=1 / dp=2 /; s/ ga=$ga / ga=$((ga / 2)) /" <<<"$record")"
  echo "job $id now asks for $(scontrol show job "$id" | sed -n 's/.*TresPerNode=//p')"
  scontrol release "$id"
  wait_done "$id"
  cat "$jobs/$id.out"
  "$build/tests/cluster/testcluster" down
  trap - EXIT
fi

artifact=$(morph_artifact_dir)
if [ -z "$artifact" ]; then
  morph_log "the Morphling artifact is not at ../shared/data/morphling-artifact: validation skipped"
  exit 0
fi
morph_log "morph fit --profile $artifact/profile/bert --save build/demo/bert.json"
"$morph" fit --profile "$artifact/profile/bert" --save "$build/bert.json"
morph_log "morph validate --artifact $artifact"
"$morph" validate --artifact "$artifact"
