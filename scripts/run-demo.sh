#!/usr/bin/env bash
# Installs the Debian packages, builds Morph (and installs it under build/demo/prefix),
# then runs its main job on the embedded default: a real local Slurm cluster with
# emulated heterogeneous GPU nodes (2 x 8 A100-80GB, 2 x 4 V100-32GB), where users submit
# by naming the model and the batch, Morph sizes the jobs and picks their plans, and
# morphd reconfigures a mix of guaranteed and best-effort jobs as they arrive and leave
# (the C++ reference trainer and the PyTorch example under morphrun at emulated speed;
# the timeline of plans and every job's loss continuity are printed at the end). Ends with the performance
# model checked against the Morphling artifact when ../shared/data is beside the checkout.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

morph_install_deps
morph_bootstrap
build="$MORPH_TOP/build/demo"
prefix="$build/prefix"
morph_build "$build" --prefix="$prefix"
make -C "$build" install >/dev/null
make -C "$build" tests/trainer/morph-trainer >/dev/null  # the reference trainer of the morphd demo
morph="$prefix/bin/morph"

morph_log "morph plan --model llama2-7b --batch 512 --gpus 2x8xa100"
"$morph" plan --model llama2-7b --batch 512 --gpus 2x8xa100 --top 5

if [ "$(id -u)" -ne 0 ] || ! command -v slurmctld >/dev/null; then
  morph_log "the local Slurm cluster needs root and Slurm: skipped"
else
  export MORPH_TESTCLUSTER_DIR=/tmp/morph-demo-cluster
  trap '"$build/tests/cluster/testcluster" down >/dev/null 2>&1 || true' EXIT
  morph_log "tests/cluster/testcluster up"
  # Never an earlier run's cluster or jobs (their checkpoints would be resumed).
  "$build/tests/cluster/testcluster" down >/dev/null 2>&1 || true
  rm -rf "$MORPH_TESTCLUSTER_DIR/jobs"
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
  # wait_done JOB: until it leaves the queue; an hour at most (the demo's jobs take minutes).
  wait_done() {
    local deadline=$((SECONDS + 3600))
    while squeue -h -j "$1" 2>/dev/null | grep -q .; do
      ((SECONDS < deadline)) || { echo "run-demo.sh: job $1 is still queued after an hour" >&2; return 1; }
      sleep 1
    done
  }

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

  morph_log "morphd: a mix of guaranteed and best-effort jobs, reconfigured as they arrive and leave"
  # The reference trainer (tests/trainer) under morphrun, at emulated speed: every step
  # lasts the iteration time Morph predicts for its plan on the emulated GPUs.
  trainer="$build/tests/trainer/morph-trainer"
  shape=(--layers 24 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --micro-batches 1)
  { cat "$MORPH_TESTCLUSTER_DIR/morph.conf"; echo "MorphdAddress=127.0.0.1:18230"; echo "RestartPenaltySeconds=30"
    echo "RefitErrorThreshold=0"; } \
    >"$jobs/morph.conf"
  export MORPH_CONF=$jobs/morph.conf OMPI_MCA_btl=self,tcp OMPI_MCA_mpi_yield_when_idle=1
  "$prefix/sbin/morphd" -D --poll 0.5 >"$jobs/morphd.log" 2>&1 &
  morphd_pid=$!
  trap 'kill $morphd_pid 2>/dev/null; "$build/tests/cluster/testcluster" down >/dev/null 2>&1 || true' EXIT
  # NAME BATCH STEPS SECONDS_LATER SBATCH_OPTIONS...
  # pt-c is the PyTorch example (examples/torch/train.py, installed with the docs) on the
  # morph module as `make install` put it: the same model, so morphd treats both alike. It
  # runs at the predicted speed, so its measured speed tells morphd what the model does and
  # a grow onto GPUs that come free pays (at half speed, 4 GPUs measure as fast as 8 predict).
  mix=("be-a 64 2500 0 --morph-sla=best-effort"
       "g-b 64 900 20 --morph-sla=guaranteed --morph-gpus=8"
       "pt-c 128 1200 40 --morph-sla=best-effort --morph-gpus=1-8"
       "g-d 64 600 60 --morph-sla=guaranteed --morph-gpus=4")
  torch_example="$prefix/share/doc/morph/examples/torch"
  python_dir=$(echo "$prefix"/lib/python3*/dist-packages)
  declare -A id_of steps_of batch_of
  for job in "${mix[@]}"; do
    read -r name batch steps later options <<<"$job"
    install -d -m 777 "$jobs/$name"
    if [[ $name == pt-* ]]; then
      cat >"$jobs/$name/train.sh" <<EOS
#!/bin/bash
export PYTHONPATH="$python_dir" OMP_NUM_THREADS=1
exec "$prefix/bin/morphrun" --driver --framework torch --checkpoint "$jobs/$name/ckpt" --metrics "$jobs/$name/metrics" \\
  -- /usr/bin/python3 "$torch_example/train.py" ${shape[*]::10} --steps $steps --loss-log "$jobs/$name/loss" --quiet \\
  --emulate-speed 1
EOS
    else
      cat >"$jobs/$name/train.sh" <<EOS
#!/bin/bash
exec "$prefix/bin/morphrun" --driver --framework torch --mpi-trainer --checkpoint "$jobs/$name/ckpt" \\
  --metrics "$jobs/$name/metrics" -- "$trainer" ${shape[*]} --global-batch $batch --steps $steps \\
  --loss-log "$jobs/$name/loss" --quiet --emulate-speed 0.5
EOS
    fi
    chmod 755 "$jobs/$name/train.sh"
    [ "$later" = 0 ] || sleep 20
    echo "\$ sbatch --morph-model=bert-336m --morph-batch=$batch $options train.sh    # $name"
    # shellcheck disable=SC2086
    id_of[$name]=$(sbatch --parsable --requeue --open-mode=append -D "$jobs" -o "$jobs/$name.out" \
      --morph-model=bert-336m --morph-batch="$batch" $options "$jobs/$name/train.sh")
    steps_of[$name]=$steps batch_of[$name]=$batch
  done
  for name in "${!id_of[@]}"; do wait_done "${id_of[$name]}"; done
  kill $morphd_pid
  wait $morphd_pid 2>/dev/null || true
  morph_log "what morphd did"
  grep -E ': (start|inplace|shrink|requeue|preempt): ' "$jobs/morphd.log" | cut -c1-160
  morph_log "morph timeline --all"
  "$prefix/bin/morph" timeline --all --state "$MORPH_TESTCLUSTER_DIR/morph.db"
  morph_log "morph status --all"
  "$prefix/bin/morph" status --all --state "$MORPH_TESTCLUSTER_DIR/morph.db"
  morph_log "loss continuity: every job against an uninterrupted run of the same trainer"
  for batch in 64 128; do
    srun -N1 -n1 -p gpu --mpi=pmix "$trainer" --layout dp=1 "${shape[@]}" --global-batch $batch --steps 2500 --quiet \
      --loss-log "$jobs/reference-$batch.loss" >/dev/null
  done
  # The PyTorch example's own uninterrupted run (its initialisation is its own).
  PYTHONPATH="$python_dir" OMP_NUM_THREADS=1 /usr/bin/python3 "$torch_example/launch_local.py" --dp 1 --global-batch 128 \
    -- /usr/bin/python3 "$torch_example/train.py" "${shape[@]::10}" --global-batch 128 --steps 1200 --quiet \
    --loss-log "$jobs/reference-pt-128.loss" >/dev/null
  for name in "${!id_of[@]}"; do
    reference="$jobs/reference-${batch_of[$name]}.loss"
    [[ $name != pt-* ]] || reference="$jobs/reference-pt-${batch_of[$name]}.loss"
    python3 - "$reference" "$jobs/$name/loss" "${steps_of[$name]}" "$name" <<'PY'
import sys
ref = dict(line.split() for line in open(sys.argv[1]))
got = dict(line.split() for line in open(sys.argv[2]))
assert len(got) == int(sys.argv[3]), f"{sys.argv[4]}: {len(got)} of {sys.argv[3]} steps"
worst = max(abs(float(got[s]) - float(ref[s])) / abs(float(ref[s])) for s in got)
print(f"{sys.argv[4]}: {len(got)} steps, largest relative loss difference {worst:.2g}")
sys.exit(0 if worst <= 1e-5 else 1)
PY
  done
  "$build/tests/cluster/testcluster" down
  trap - EXIT
  unset MORPH_CONF  # it was the cluster's, now gone
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
