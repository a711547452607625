#!/usr/bin/env bats
# Morph inside a real Slurm cluster: tests/cluster/testcluster starts one slurmctld and
# one slurmd per emulated node (2 x 8 a100-80g, 2 x 4 v100-32g) with spank_morph and
# job_submit_morph from this build, and every test submits real jobs to it.
#
# Needs root, Slurm and munge (scripts/run-tests.sh installs them) and a build without
# --enable-sanitizers (the system's slurmctld cannot load sanitized plugins); otherwise
# every test is skipped with the reason.

bats_require_minimum_version 1.5.0
load cluster

setup_file() {
  # Not under BATS_FILE_TMPDIR (mode 700): jobs of other users must reach their folder.
  # task/cgroup with ConstrainDevices where this machine allows it: jobs see only their GPUs.
  MORPH_TESTCLUSTER_CGROUP=devices cluster_setup 18170 /tmp/morph-testcluster-bats
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  export JOBS="$MORPH_TESTCLUSTER_DIR/jobs"
  install -d -m 1777 "$JOBS"
  # Prints the job's MORPH_* variables, its GPUs and, from one srun step per node, what a
  # step sees; sleeps on its first run when asked, so that it can be requeued.
  cat >"$JOBS/env.sh" <<'EOF'
#!/bin/bash
if [ -n "${HOLD_FIRST_RUN:-}" ] && [ -z "${SLURM_RESTART_COUNT:-}" ]; then sleep 600; fi
env | grep -E '^(MORPH_|CUDA_VISIBLE_DEVICES=|SLURM_RESTART_COUNT=|SLURM_JOB_NUM_NODES=)' | sort
srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 bash -c 'echo "step $SLURMD_NODENAME $MORPH_PLAN"'
EOF
  chmod 755 "$JOBS/env.sh"
  # Prints, from one task per GPU, how many of its node's GPU device files it may open: an
  # allowed one fails with ENXIO (no driver behind the emulated device), a denied one with
  # EPERM (the job's devices cgroup); sleeps on its first run, so that it can be requeued.
  cat >"$JOBS/devices.sh" <<'EOF'
#!/bin/bash
srun bash -c 'allowed=0 denied=0
for d in "$MORPH_TESTCLUSTER_DIR/dev/$SLURMD_NODENAME"/nvidia*; do
  case $( (exec 3<"$d") 2>&1) in
    *"No such device or address"*) allowed=$((allowed + 1)) ;;
    *"Operation not permitted"*) denied=$((denied + 1)) ;;
    *) echo "unexpected: $d" ;;
  esac
done
echo "run ${SLURM_RESTART_COUNT:-0} task $SLURM_PROCID $SLURMD_NODENAME allowed=$allowed denied=$denied"'
if [ -z "${SLURM_RESTART_COUNT:-}" ]; then sleep 600; fi
EOF
  chmod 755 "$JOBS/devices.sh"
}

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
}

# A test that stops slurmctld or edits plugstack.conf, slurm.conf or morph.conf leaves the
# cluster as it found it.
teardown() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || return 0
  kill -CONT "$(cat "$MORPH_TESTCLUSTER_DIR/run/slurmctld.pid")" 2>/dev/null || true
  rm -f "$MORPH_TESTCLUSTER_DIR"/prolog.d/*
  if [ -f "$MORPH_TESTCLUSTER_DIR/plugstack.conf.orig" ]; then
    mv "$MORPH_TESTCLUSTER_DIR/plugstack.conf.orig" "$MORPH_TESTCLUSTER_DIR/plugstack.conf"
  fi
  local f reconfigure=
  for f in slurm.conf morph.conf; do
    if [ -f "$MORPH_TESTCLUSTER_DIR/$f.orig" ]; then
      mv "$MORPH_TESTCLUSTER_DIR/$f.orig" "$MORPH_TESTCLUSTER_DIR/$f"
      reconfigure=1
    fi
  done
  [ -z "$reconfigure" ] || scontrol reconfigure
}

teardown_file() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || return 0
  if [ -n "${BATS_SUITE_TEST_NUMBER:-}" ] && [ -d "$MORPH_TESTCLUSTER_DIR/log" ]; then
    cp -r "$MORPH_TESTCLUSTER_DIR/log" "${MORPH_BUILDDIR}/tests/cluster/last-logs" 2>/dev/null || true
  fi
  cluster_teardown
}

# --- helpers ----------------------------------------------------------------------------

# submit ARGS...: sbatch --parsable; the job id in $job, the full output in $output.
submit() {
  run sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" "$@"
  job=${output##*$'\n'}
}

# wait_state JOB STATE [SECONDS]
wait_state() {
  local i state
  for i in $(seq $((${3:-60} * 2))); do
    state=$(job_field "$1" JobState)
    [ "$state" = "$2" ] && return 0
    case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
      [ "$state" = "$2" ] || { echo "job $1 ended $state, expected $2" >&2; cat "$JOBS/$1.out" >&2 2>/dev/null; return 1; } ;;
    esac
    sleep 0.5
  done
  echo "job $1 is $state after ${3:-60} s, expected $2" >&2
  return 1
}

# assert_refused WORDS...: the last `run` failed and said WORDS (each, case-insensitive).
assert_refused() {
  [ "$status" -ne 0 ] || { echo "expected a refusal, got: $output" >&2; return 1; }
  local word
  for word in "$@"; do
    grep -qiF -- "$word" <<<"$output" || { echo "output does not mention '$word': $output" >&2; return 1; }
  done
}

# drained_nodes: nodes slurmd or slurmctld drained (none, after every test).
drained_nodes() {
  sinfo -h -N -t drain,draining,drained -o '%N %E' | sort -u
}

# job_state JOB: its state from the list of all jobs (REQUEST_JOB_INFO), so that polling
# does not count as reads of one job (REQUEST_JOB_INFO_SINGLE, what a plan read costs).
job_state() {
  squeue -h -a -t all -o '%i %T' | awk -v j="$1" '$1 == j { print $2 }'
}

# plan_reads: slurmctld's count of single-job reads so far (sdiag).
plan_reads() {
  sdiag | awk '$1 == "REQUEST_JOB_INFO_SINGLE" { sub("count:", "", $4); print $4; found = 1 } END { if (!found) print 0 }'
}

# release_with_stalled_controller JOB SECONDS: releases the held JOB and stops slurmctld
# (SIGSTOP) for SECONDS from the moment the job's prolog runs, before its batch step
# starts. (The prolog only signals the moment: a process it leaves behind does not
# survive it.)
release_with_stalled_controller() {
  local hook="$MORPH_TESTCLUSTER_DIR/prolog.d/$1" marker="$BATS_TEST_TMPDIR/prolog-$1" i
  local pid
  pid=$(cat "$MORPH_TESTCLUSTER_DIR/run/slurmctld.pid")
  cat >"$hook" <<EOF
#!/bin/sh
rm -f "$hook"
touch "$marker"
for i in \$(seq 200); do grep -q '^State:.*T' /proc/$pid/status && exit 0; sleep 0.05; done
EOF
  chmod 755 "$hook"
  scontrol release "$1"
  for i in $(seq 1200); do [ -e "$marker" ] && break; sleep 0.05; done
  [ -e "$marker" ] || { echo "job $1 did not start" >&2; return 1; }
  kill -STOP "$pid"
  sleep "$2"
  kill -CONT "$pid"
}

controller_alive() {
  kill -0 "$(cat "$MORPH_TESTCLUSTER_DIR/run/slurmctld.pid")" && scontrol ping | grep -q UP
}

# expect_plan_feasible JOB: libmorph finds the recorded plan feasible on the recorded GPUs.
expect_plan_feasible() {
  local model batch nodes gpn type plan
  model=$(record_value "$1" model) batch=$(record_value "$1" batch)
  nodes=$(record_value "$1" nodes) gpn=$(record_value "$1" gpus_per_node) type=$(record_value "$1" type)
  plan="dp=$(record_value "$1" dp) tp=$(record_value "$1" tp) pp=$(record_value "$1" pp)"
  run "$MORPH_BUILDDIR/tools/morph/morph" --config "$MORPH_CONF" --catalog "$MORPH_SRCDIR/share/models.json" \
    --json plan --all --model "$model" --batch "$batch" --gpus "${nodes}x${gpn}x${type}"
  [ "$status" -eq 0 ]
  grep -q "\"text\": \"$plan zero=$(record_value "$1" zero)" <<<"$output" ||
    { echo "morph plan does not list $plan as feasible on ${nodes}x${gpn}x${type}" >&2; return 1; }
}

# expect_env_matches_record JOB: the job's output shows the MORPH_* of its record.
expect_env_matches_record() {
  local out="$JOBS/$1.out" key
  for key in dp tp pp zero ga mbs; do
    local var=MORPH_${key^^}
    [ "$key" = mbs ] && var=MORPH_MICRO_BATCH
    grep -qx "$var=$(record_value "$1" "$key")" "$out" || { echo "$var differs from the record in $out" >&2; cat "$out" >&2; return 1; }
  done
  grep -qx "MORPH_GLOBAL_BATCH=$(record_value "$1" batch)" "$out"
  grep -qx "MORPH_GPU_TYPE=$(record_value "$1" type)" "$out"
  local gpus
  gpus=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$out" | tr ',' '\n' | wc -l)
  [ "$gpus" -eq "$(record_value "$1" gpus_per_node)" ] || { echo "the job sees $gpus GPUs" >&2; return 1; }
  # One srun step per node, each with the same plan.
  local plan
  plan=$(sed -n 's/^MORPH_PLAN=//p' "$out")
  [ "$(grep -c '^step ' "$out")" -eq "$(record_value "$1" nodes)" ] || { echo "steps:" >&2; cat "$out" >&2; return 1; }
  [ -z "$(grep '^step ' "$out" | grep -vF " $plan")" ] || { echo "a step saw another plan" >&2; cat "$out" >&2; return 1; }
}

# --- the cluster itself ------------------------------------------------------------------------

@test "testcluster up twice is safe: same cluster, same daemons, SLURM_CONF last" {
  local before after
  before=$(cat "$MORPH_TESTCLUSTER_DIR/run/slurmctld.pid")
  run "$MORPH_BUILDDIR/tests/cluster/testcluster" up
  [ "$status" -eq 0 ]
  [ "${lines[${#lines[@]} - 1]}" = "SLURM_CONF=$SLURM_CONF" ]
  after=$(cat "$MORPH_TESTCLUSTER_DIR/run/slurmctld.pid")
  [ "$before" = "$after" ]
  run "$MORPH_BUILDDIR/tests/cluster/testcluster" up --nodes 1x4xv100-32g
  [ "$status" -ne 0 ]
  grep -q "already up with another layout" <<<"$output"
  [ "$(sinfo -h -N -o '%N %T' | sort -u | awk '{print $2}' | sort -u)" = idle ]
  [ "$(sinfo -h -N -p gpu -o '%N' | wc -l)" -eq 4 ]
}

# --- acceptance: plan-agnostic submissions -------------------------------------------------

@test "gpt2-1.5b batch 16 starts on GPUs libmorph finds feasible and its tasks see the recorded plan" {
  submit --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  grep -q "morph: gpt2-1.5b batch 16 -> " <<<"$output"
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" model)" = gpt2-1.5b ]
  [ "$(job_field "$job" TresPerNode)" = "gres:gpu:$(record_value "$job" type):$(record_value "$job" gpus_per_node)" ]
  expect_plan_feasible "$job"
  expect_env_matches_record "$job"
}

@test "llama2-7b batch 512 starts on GPUs libmorph finds feasible and its tasks see the recorded plan" {
  submit --morph-model=llama2-7b --morph-batch=512 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  grep -q "morph: llama2-7b batch 512 -> " <<<"$output"
  wait_state "$job" COMPLETED
  expect_plan_feasible "$job"
  expect_env_matches_record "$job"
  [ "$(job_field "$job" NumTasks)" -eq "$(( $(record_value "$job" nodes) * $(record_value "$job" gpus_per_node) ))" ]
}

@test "a job on several nodes gets whole nodes and one step per node sees the plan" {
  submit --morph-model=llama-30b --morph-batch=256 --morph-gpus=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" nodes)" -eq 2 ]
  [ "$(job_field "$job" NumNodes)" = 2 ]
  expect_env_matches_record "$job"
}

@test "every option reaches job_submit through the SPANK environment and constrains the choice" {
  submit --morph-model=bert-336m --morph-batch=64 --morph-seq=384 --morph-sla=guaranteed \
    --morph-plans=dp,zero --morph-gpus=2-4 --morph-gpu-type=v100-32g --morph-framework=deepspeed "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" seq)" = 384 ]
  [ "$(record_value "$job" sla)" = guaranteed ]
  [ "$(record_value "$job" plans)" = dp,zero ]
  [ "$(record_value "$job" gpus)" = 2-4 ]
  [ "$(record_value "$job" gpu_types)" = v100-32g ]
  [ "$(record_value "$job" framework)" = deepspeed ]
  [ "$(record_value "$job" type)" = v100-32g ]
  local gpus=$(( $(record_value "$job" nodes) * $(record_value "$job" gpus_per_node) ))
  [ "$gpus" -ge 2 ] && [ "$gpus" -le 4 ] || fail "$gpus GPUs for --morph-gpus=2-4"
  [ "$(record_value "$job" tp)" = 1 ] && [ "$(record_value "$job" pp)" = 1 ] && [ "$(record_value "$job" offload)" = 0 ] ||
    fail "$(job_record "$job")"
  grep -qx MORPH_FRAMEWORK=deepspeed "$JOBS/$job.out"
  grep -qx MORPH_SEQ=384 "$JOBS/$job.out"
}

@test "sbatch -p: a Morph job is sized on its partition's nodes within its MaxNodes" {
  # testcluster's hidden partition v100-32g: the V100 nodes, MaxNodes=1. Before,
  # gpt2-1.5b was planned on an A100 and slurmctld refused the job.
  submit -p v100-32g --morph-model=gpt2-1.5b --morph-batch=32 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" type)" = v100-32g ]
  [ "$(record_value "$job" gpu_types)" = v100-32g ]
  [ "$(record_value "$job" max_nodes)" = 1 ]
  [ "$(job_field "$job" Partition)" = v100-32g ]
  expect_env_matches_record "$job"
  # What needs more than one V100 node is refused there, saying why per GPU type.
  submit -p v100-32g --morph-model=llama-30b --morph-batch=256 "$JOBS/env.sh"
  [ "$status" -ne 0 ]
  grep -q "a100-80g: partition v100-32g has none of its nodes" <<<"$output"
  grep -q "v100-32g: no plan fits on 1-4 GPUs" <<<"$output"
  grep -q "job_submit/morph: loaded (3 partitions from $SLURM_CONF)" "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  # A pending job of the default partition, whose plans may use A100s, cannot move to it.
  run sbatch --parsable -H -D "$JOBS" -o /dev/null --morph-model=gpt2-1.5b --morph-batch=16 --wrap=true
  [ "$status" -eq 0 ]
  local held=${output##*$'\n'}
  run scontrol update job="$held" Partition=v100-32g
  [ "$status" -ne 0 ]
  # Slurm 22.05's job_modify has no message for the user: the error code says what.
  [[ "$output" == *"Requested partition configuration not available now"* ]] || fail "error code" "$output"
  grep -q "job $held: update refused: morph: Partition=v100-32g: partition v100-32g has no a100-80g node" \
    "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  [ "$(job_field "$held" Partition)" = gpu ]
  scancel "$held"
}

@test "scontrol reconfigure: job_submit_morph reads slurm.conf's partitions and morph.conf again, and keeps what loaded if they break" {
  # A partition added to slurm.conf. Before, the plugin read slurm.conf only when
  # slurmctld started (22.05 does not init it again on reconfigure): a job of -p late was
  # given an A100 record, outside the partition.
  local v100s
  v100s=$(scontrol show partition v100-32g -o | sed -n 's/.* Nodes=\([^ ]*\) .*/\1/p')
  [ -n "$v100s" ]
  # Slurm stamps its configuration in seconds: a reconfigure in the second of the
  # plugin's last load is seen from the next second on (reload_due), so each one here
  # comes a second after what came before.
  sleep 1
  cp "$SLURM_CONF" "$MORPH_TESTCLUSTER_DIR/slurm.conf.orig"
  echo "PartitionName=late Nodes=$v100s MaxNodes=1 Hidden=YES MaxTime=INFINITE State=UP" >>"$SLURM_CONF"
  scontrol reconfigure
  submit -H -p late --morph-model=gpt2-1.5b --morph-batch=32 --wrap=true
  [ "$status" -eq 0 ]
  [ "$(record_value "$job" type)" = v100-32g ]
  [ "$(record_value "$job" max_nodes)" = 1 ]
  scancel "$job"
  grep -q "job_submit/morph: read again after slurmctld's configuration changed (4 partitions from $SLURM_CONF)" \
    "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  # A morph.conf broken by an edit in progress: Morph jobs are still sized, by what loaded.
  sleep 1
  cp "$MORPH_TESTCLUSTER_DIR/morph.conf" "$MORPH_TESTCLUSTER_DIR/morph.conf.orig"
  echo "NodeName=broken Gpus=x" >>"$MORPH_TESTCLUSTER_DIR/morph.conf"
  scontrol reconfigure
  submit -H -p late --morph-model=gpt2-1.5b --morph-batch=32 --wrap=true
  [ "$status" -eq 0 ]
  [ "$(record_value "$job" type)" = v100-32g ]
  scancel "$job"
  grep -q "job_submit/morph: not read again after slurmctld's configuration changed: .*broken.*; Morph jobs are sized as before" \
    "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
}

@test "--morph-iterations reaches the record for morphd and does not change the plan (issue 11)" {
  submit --morph-model=gpt2-1.5b --morph-batch=16 --morph-iterations=25000 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  local declared=$job
  [ "$(record_value "$declared" iterations)" = 25000 ]
  submit --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  [ "$(job_record "$declared" | sed 's/ iterations=25000$//')" = "$(job_record "$job")" ]
  run sbatch --morph-model=gpt2-1.5b --morph-batch=16 --morph-iterations=0 "$JOBS/env.sh"
  assert_refused "--morph-iterations" "'0' is out of range"
  wait_state "$declared" COMPLETED
  wait_state "$job" COMPLETED
}

@test "--gres with --morph-plan records the user's request as the SLA baseline" {
  submit --gres=gpu:a100-80g:4 --morph-model=gpt2-1.5b --morph-batch=64 --morph-sla=guaranteed \
    --morph-plan=dp=4 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" base_gpus_per_node)" = 4 ]
  [ "$(record_value "$job" base_type)" = a100-80g ]
  [ "$(record_value "$job" base_dp)" = 4 ]
  # Guaranteed: at most the baseline's GPUs, at least its predicted speed.
  [ "$(record_value "$job" gpus_per_node)" -le 4 ]
  awk -v now="$(record_value "$job" iter_ms)" -v base="$(record_value "$job" base_iter_ms)" 'BEGIN { exit !(now <= base) }'
}

@test "a model that fits no GPU type is refused at submission, saying why" {
  submit --morph-model=gpt3-175b --morph-batch=64 "$JOBS/env.sh"
  assert_refused "morph: gpt3-175b batch 64" "no plan fits" "a100-80g" "v100-32g" "out of"
  [[ ! $output =~ ^[0-9]+$ ]] || fail "a job id for a refused submission: $output"
}

@test "a job without --morph-* options gets exactly the request it asked for" {
  submit -N 1 -n 2 -c 3 --mem=5G --gres=gpu:v100-32g:2 --comment=plain "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  ! grep -q morph: <<<"$output" || fail "a plain job got a Morph message: $output"
  wait_state "$job" COMPLETED
  [ "$(job_field "$job" TresPerNode)" = gres:gpu:v100-32g:2 ]
  [ "$(job_field "$job" NumTasks)" = 2 ]
  [ "$(job_field "$job" CPUs/Task)" = 3 ]
  [ "$(job_field "$job" MinMemoryNode)" = 5G ]
  [ -z "$(job_record "$job")" ]
  ! grep -q '^MORPH_PLAN=' "$JOBS/$job.out"
}

# --- bad and hostile input -------------------------------------------------------------------

@test "bad input is refused at submission with a message naming the option" {
  run sbatch --morph-model=nosuchmodel --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model" "unknown model 'nosuchmodel'"
  run sbatch --morph-model=layers=32,hidden=4096 --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model" "missing heads"
  run sbatch --morph-model=layers=1000000000000000000000000000000,hidden=8,heads=2,seq=4 --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model" "layers"
  run sbatch --morph-model=gpt2 --morph-batch=abc "$JOBS/env.sh"
  assert_refused "--morph-batch" "'abc' is not an integer"
  run sbatch --morph-model=gpt2 --morph-batch=-3 "$JOBS/env.sh"
  assert_refused "--morph-batch" "'-3' is out of range [1, "
  run sbatch --morph-model=gpt2 --morph-batch=8 --morph-sla=sometimes "$JOBS/env.sh"
  assert_refused "--morph-sla" "guaranteed or best-effort"
  run sbatch --morph-model=gpt2 --morph-batch=8 --morph-gpus=4-2 "$JOBS/env.sh"
  assert_refused "--morph-gpus" "MAX below MIN"
  run sbatch --morph-model=gpt2 --morph-batch=8 --morph-gpu-type=h100 "$JOBS/env.sh"
  assert_refused "--morph-gpu-type" "no GPU type 'h100'"
  run sbatch --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model" "missing"
  # --mem=0 is Slurm's "all of each node's memory" (pn_min_memory 0), not "no --mem".
  run sbatch --mem=0 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  assert_refused "--mem=0 (all of each node's memory)" "give --mem=SIZE as a floor"
}

@test "with catalog= and conf= in plugstack.conf the client itself checks model names and GPU types" {
  local conf="$BATS_TEST_TMPDIR/client.conf"
  sed "s|^PlugStackConfig=.*|PlugStackConfig=$BATS_TEST_TMPDIR/plugstack.conf|" "$SLURM_CONF" >"$conf"
  echo "required $MORPH_BUILDDIR/plugins/.libs/spank_morph.so catalog=$MORPH_SRCDIR/share/models.json conf=$MORPH_CONF" \
    >"$BATS_TEST_TMPDIR/plugstack.conf"
  SLURM_CONF=$conf run sbatch --morph-model=nosuchmodel --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model" "unknown model 'nosuchmodel'" "init_post_opt"
  SLURM_CONF=$conf run sbatch --morph-model=gpt2 --morph-batch=8 --morph-gpu-type=h100 "$JOBS/env.sh"
  assert_refused "--morph-gpu-type" "no GPU type 'h100'" "init_post_opt"
  echo "required $MORPH_BUILDDIR/plugins/.libs/spank_morph.so colour=blue" >"$BATS_TEST_TMPDIR/plugstack.conf"
  SLURM_CONF=$conf run sbatch --morph-model=gpt2 --morph-batch=8 "$JOBS/env.sh"
  assert_refused "unknown argument 'colour=blue'"
  echo "required $MORPH_BUILDDIR/plugins/.libs/spank_morph.so conf=etc/morph.conf" >"$BATS_TEST_TMPDIR/plugstack.conf"
  SLURM_CONF=$conf run sbatch --morph-model=gpt2 --morph-batch=8 "$JOBS/env.sh"
  assert_refused "conf=etc/morph.conf is not an absolute path"
}

@test "a 4 KB option value is refused without being echoed" {
  run sbatch --morph-model="$(head -c 4096 /dev/zero | tr '\0' A)" --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model" "4096 bytes" "too long"
  # Morph's line is short (sbatch's own "Invalid ... argument" line repeats the value).
  local line
  line=$(grep 'morph: --morph-model' <<<"$output")
  [ "${#line}" -lt 200 ]
}

@test "shell metacharacters are data, never executed" {
  local marker="$BATS_TEST_TMPDIR/pwned"
  run sbatch "--morph-model=\$(touch $marker);\`touch $marker\`" --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model"
  run sbatch --morph-model=gpt2 "--morph-batch=8;touch $marker" "$JOBS/env.sh"
  assert_refused "--morph-batch"
  [ ! -e "$marker" ]
}

@test "hostile SPANK environments that bypass the client are refused by job_submit_morph" {
  local conf="$BATS_TEST_TMPDIR/client.conf"
  sed "s|^PlugStackConfig=.*|PlugStackConfig=$BATS_TEST_TMPDIR/plugstack.conf|" "$SLURM_CONF" >"$conf"
  echo "required $MORPH_BUILDDIR/tests/cluster/.libs/spank_inject.so" >"$BATS_TEST_TMPDIR/plugstack.conf"
  SLURM_CONF=$conf run sbatch --inject-env=MORPH_REQUEST_MODEL=gpt2 --inject-env=MORPH_REQUEST_BATCH=abc "$JOBS/env.sh"
  assert_refused "morph: --morph-batch" "'abc' is not an integer"
  SLURM_CONF=$conf run sbatch --inject-env=MORPH_REQUEST_MODEL=nosuch --inject-env=MORPH_REQUEST_BATCH=8 "$JOBS/env.sh"
  assert_refused "morph:" "unknown model 'nosuch'"
  SLURM_CONF=$conf run sbatch --inject-env=MORPH_REQUEST_BATCH=8 "$JOBS/env.sh"
  assert_refused "morph: --morph-model" "missing"
}

@test "slurmctld survives 1000 randomized malformed submissions and still sizes jobs" {
  local conf="$BATS_TEST_TMPDIR/client.conf"
  sed "s|^PlugStackConfig=.*|PlugStackConfig=$BATS_TEST_TMPDIR/plugstack.conf|" "$SLURM_CONF" >"$conf"
  echo "required $MORPH_BUILDDIR/tests/cluster/.libs/spank_inject.so" >"$BATS_TEST_TMPDIR/plugstack.conf"
  local keys=(MODEL BATCH SEQ SLA PLANS GPUS GPU_TYPE FRAMEWORK PLAN)
  local values=("" "-1" "0" "abc" "1e400" "99999999999999999999999" "gpt2" "llama2-7b" "4-2" "2-" "guaranteed"
    "layers=1000000000000000000000000000000,hidden=8,heads=2,seq=4" "layers=2,hidden=8,heads=3,seq=4"
    "dp=0" "dp=4,warp=9" "a100-80g,,v100" "\$(reboot)" "\`id\`" "%n%s%x" "../../etc/passwd" "all,zero,gc"
    "$(head -c 600 /dev/zero | tr '\0' 9)" "$(head -c 4000 /dev/zero | tr '\0' Z)" "nan" "inf" "0x10")
  local i n args refused=0 accepted=0
  RANDOM=2026
  for i in $(seq 1000); do
    args=()
    for n in $(seq $((RANDOM % 4 + 1))); do
      args+=("--inject-env=MORPH_REQUEST_${keys[RANDOM % ${#keys[@]}]}=${values[RANDOM % ${#values[@]}]}")
    done
    if SLURM_CONF=$conf sbatch -H -D "$JOBS" -o /dev/null "${args[@]}" --wrap=true >/dev/null 2>&1; then
      accepted=$((accepted + 1))
    else
      refused=$((refused + 1))
    fi
    if [ $((i % 250)) -eq 0 ]; then controller_alive || { echo "slurmctld died after $i submissions" >&2; return 1; }; fi
  done
  echo "# accepted $accepted, refused $refused" >&3
  [ "$refused" -gt 900 ]
  scancel --state=PENDING --user=root -H 2>/dev/null || scancel -u root -t PENDING
  controller_alive
  submit --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
}

# --- Slurm facts of ARCHITECTURE.md, one test each -----------------------------------------

@test "fact: the plugins export only their plugin symbols, at Slurm's exact version, and slurmctld loads them" {
  run nm -D --defined-only "$MORPH_BUILDDIR/plugins/.libs/job_submit_morph.so"
  [ "$(awk '{print $3}' <<<"$output" | sort | tr '\n' ' ')" = "fini init job_modify job_submit plugin_name plugin_type plugin_version " ]
  run nm -D --defined-only "$MORPH_BUILDDIR/plugins/.libs/spank_morph.so"
  [ "$(awk '{print $3}' <<<"$output" | sort | tr '\n' ' ')" = "plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init slurm_spank_init_post_opt slurm_spank_task_init slurm_spank_user_init spank_plugin_version " ]
  grep -q "job_submit/morph: loaded" "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  ! grep -q "Incompatible Slurm plugin" "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
}

@test "fact: the plugins take xmalloc and logging from the loading process and do not link libslurm" {
  run nm -D --undefined-only "$MORPH_BUILDDIR/plugins/.libs/job_submit_morph.so"
  grep -qw slurm_xstrdup <<<"$output"
  grep -qw slurm_xfree <<<"$output"
  run ldd "$MORPH_BUILDDIR/plugins/.libs/job_submit_morph.so"
  ! grep -q libslurm <<<"$output" || fail "job_submit_morph.so links libslurm: $output"
  run ldd "$MORPH_BUILDDIR/plugins/.libs/spank_morph.so"
  ! grep -q libslurm <<<"$output"
}

@test "fact: a GPU request needs the gres: prefix; the plugin writes it and the job gets its GPUs" {
  submit --morph-model=bert-336m --morph-batch=64 --morph-gpus=2 "$JOBS/env.sh"
  wait_state "$job" COMPLETED
  [[ $(job_field "$job" TresPerNode) == gres:gpu:* ]]
  [ "$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$JOBS/$job.out" | tr ',' '\n' | wc -l)" -eq 2 ]
}

@test "fact: a plan is changed by checkpoint, requeue-hold, update, release; the job keeps its id and sees the new plan" {
  HOLD_FIRST_RUN=1 submit --requeue --export=ALL,HOLD_FIRST_RUN=1 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" RUNNING
  [ "$(record_value "$job" gpus_per_node)" = 1 ]
  # Growing a running GPU job in place is not supported.
  run scontrol update job="$job" NumNodes=2
  [ "$status" -ne 0 ]
  run scontrol requeuehold "$job"
  [ "$status" -eq 0 ]
  wait_state "$job" PENDING
  # Root's requeue-hold reads JobHeldUser, told from a user's hold by this description
  # (daemon/pending_reason.h, held_by_user).
  [ "$(job_field "$job" Reason)" = job_requeued_in_held_state ]
  # The new plan: two GPUs, dp=2, half the accumulation steps (same global batch).
  local new
  new=$(job_record "$job" | sed 's/gpus_per_node=1 /gpus_per_node=2 /; s/ dp=1 / dp=2 /' |
    sed -E "s/ ga=([0-9]+) / ga=$(( $(record_value "$job" ga) / 2 )) /")
  run scontrol update job="$job" AdminComment="$new"
  [ "$status" -eq 0 ]
  # job_modify made the request follow the record.
  [ "$(job_field "$job" TresPerNode)" = gres:gpu:a100-80g:2 ]
  [ "$(job_field "$job" NumTasks)" = 2 ]
  local released=$SECONDS
  scontrol release "$job"
  wait_state "$job" COMPLETED 90
  grep -qx SLURM_RESTART_COUNT=1 "$JOBS/$job.out"
  grep -qx MORPH_DP=2 "$JOBS/$job.out"
  # job_submit is not called again on requeue: the admin's plan survived the restart.
  [ "$(record_value "$job" dp)" = 2 ]
  # A requeued job waits out cred_expire (10 s here) before it starts again.
  [ $((SECONDS - released)) -ge 5 ]
}

@test "task/cgroup: a Morph job's tasks may open the GPUs of its plan and no others, also after its plan changes" {
  grep -qx 'TaskPlugin=task/cgroup' "$SLURM_CONF" || skip "no writable cgroup v1 devices controller here: the cluster runs task/none"
  submit --requeue --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/devices.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" RUNNING
  local node i
  node=$(job_field "$job" NodeList)
  [ "$(record_value "$job" gpus_per_node)" = 1 ]
  for i in $(seq 50); do grep -q '^run 0 ' "$JOBS/$job.out" && break; sleep 0.2; done
  [ "$(grep '^run 0 ' "$JOBS/$job.out")" = "run 0 task 0 $node allowed=1 denied=7" ] || { cat "$JOBS/$job.out"; false; }
  # Two GPUs by the record (as morphd changes a plan): the requeued job's tasks get two.
  scontrol requeuehold "$job"
  wait_state "$job" PENDING
  scontrol update job="$job" AdminComment="$(job_record "$job" | sed 's/gpus_per_node=1 /gpus_per_node=2 /; s/ dp=1 / dp=2 /' |
    sed -E "s/ ga=([0-9]+) / ga=$(( $(record_value "$job" ga) / 2 )) /")"
  scontrol release "$job"
  wait_state "$job" COMPLETED 90
  node=$(job_field "$job" NodeList)
  [ "$(grep -c "^run 1 task [01] $node allowed=2 denied=6$" "$JOBS/$job.out")" = 2 ] || { cat "$JOBS/$job.out"; false; }
}

@test "fact: job_modify checks every update of a Morph record" {
  submit -H --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  run scontrol update job="$job" AdminComment="morph:v1 model=gpt2 batch=16"
  [ "$status" -ne 0 ]
  run scontrol update job="$job" AdminComment="$(job_record "$job" | sed 's/ dp=1 / dp=3 /')"
  [ "$status" -ne 0 ]
  grep -q "update refused: morph: AdminComment: plan uses 3 GPUs" "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  run scontrol update job="$job" AdminComment="$(job_record "$job")" TresPerNode=gres:gpu:a100-80g:4
  [ "$status" -ne 0 ]
  # A note must not replace the record the job's tasks read their plan from ...
  run scontrol update job="$job" AdminComment="reviewed by ops"
  [ "$status" -ne 0 ]
  [[ $(job_record "$job") == morph:v1* ]]
  scancel "$job"
  # ... while on a job that is not Morph's it passes through.
  submit -H --wrap=true
  run scontrol update job="$job" AdminComment="reviewed by ops"
  [ "$status" -eq 0 ]
  scancel "$job"
}

@test "fact: only root or SlurmUser may change a job's plan" {
  chmod 1777 "$JOBS"
  run runuser -u nobody -- sbatch --parsable -H -D "$JOBS" -o /dev/null --morph-model=gpt2-1.5b --morph-batch=16 --wrap=true
  [ "$status" -eq 0 ]
  local user_job=${output##*$'\n'}
  [[ $(job_record "$user_job") == morph:v1* ]]
  run runuser -u nobody -- scontrol update job="$user_job" AdminComment="$(job_record "$user_job" | sed 's/ dp=1 / dp=2 /')"
  [ "$status" -ne 0 ]
  grep -qi "denied\|permission" <<<"$output"
  [ "$(record_value "$user_job" dp)" = 1 ]
  scancel "$user_job"
}

# morphd holds a requeued job by priority 0 and releases it (daemon/slurm_client.cc); it
# must tell a hold of the job's user (JobHeldUser) from its own, and never place its own
# over the user's: Slurm keeps one hold, and root's release ends whichever it is.
@test "fact: Slurm keeps one hold: root's replaces the user's and its release ends it; a user's over root's changes nothing" {
  chmod 1777 "$JOBS"
  # Begins in an hour: released, it stays pending.
  run runuser -u nobody -- sbatch --parsable -H --begin=now+3600 -D "$JOBS" -o /dev/null \
    --morph-model=gpt2-1.5b --morph-batch=16 --wrap=true
  [ "$status" -eq 0 ]
  local user_job=${output##*$'\n'}
  [ "$(job_field "$user_job" Reason)" = JobHeldUser ]
  [ "$(job_field "$user_job" Priority)" = 0 ]
  scontrol update job="$user_job" Priority=0
  [ "$(job_field "$user_job" Reason)" = JobHeldAdmin ]
  scontrol release "$user_job"
  [ "$(job_field "$user_job" Priority)" != 0 ]
  [ "$(job_field "$user_job" JobState)" = PENDING ]
  # Held by root, the user's hold is accepted and leaves no trace; the user cannot release it.
  scontrol update job="$user_job" Priority=0
  run runuser -u nobody -- scontrol hold "$user_job"
  [ "$status" -eq 0 ]
  [ "$(job_field "$user_job" Reason)" = JobHeldAdmin ]
  run runuser -u nobody -- scontrol release "$user_job"
  [ "$status" -ne 0 ]
  [ "$(job_field "$user_job" Priority)" = 0 ]
  scancel "$user_job"
}

@test "fact: srun --mpi=pmix starts Open MPI across emulated nodes" {
  [ -x "$MORPH_BUILDDIR/tests/cluster/mpi_hello" ] || skip "configure found no Open MPI"
  OMPI_MCA_btl=self,tcp run timeout 120 "$MORPH_SRCDIR/tests/cluster/mpi_init_retry" srun --mpi=pmix -N 2 -n 4 --ntasks-per-node=2 -p gpu \
    "$MORPH_BUILDDIR/tests/cluster/mpi_hello"
  [ "$status" -eq 0 ] || { printf 'srun exited %s (124: timed out):\n%s\n' "$status" "$output" >&2; false; }
  [ "$(grep -c 'of 4 on .* sum 6$' <<<"$output")" -eq 4 ]
}

@test "continuity: checkpoints resharded between layouts resume under srun --mpi=pmix" {
  [ -x "$MORPH_BUILDDIR/tests/trainer/morph-trainer" ] || skip "configure found no Open MPI"
  OMPI_MCA_btl=self,tcp TRAINER="$MORPH_BUILDDIR/tests/trainer/morph-trainer" \
    MORPH="$MORPH_BUILDDIR/tools/morph/morph" STEPS=6 SAVE_AT=3 ROUND_TRIP=0 \
    run timeout 900 "$MORPH_SRCDIR/tests/trainer/continuity.sh"
  [ "$status" -eq 0 ] || { printf '%s\n' "$output" >&2; false; }
  [ "$(grep -c '^continuity: from=.* max_rel_loss_diff=' <<<"$output")" -eq 5 ]
}

@test "fact: SIGUSR1 cannot be the checkpoint signal" {
  local conf="$BATS_TEST_TMPDIR/morph.conf"
  cp "$MORPH_CONF" "$conf"
  echo CheckpointSignal=SIGUSR1 >>"$conf"
  run "$MORPH_BUILDDIR/tools/morph/morph" --config "$conf" plan --model gpt2 --batch 8 --gpus 1xa100-80g
  assert_refused "CheckpointSignal" "SIGUSR1" "NCCL"
}

# --- issue 10: the Slurm path tried as a hostile and a careless user would -------------------

@test "issue 10 (1): records the planner writes are records the tasks read; no node is drained" {
  # Once accepted with ga above 2^20, which the tasks refused: a drained node, COMPLETED 0:0.
  run sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" --morph-model=gpt2-1.5b --morph-batch=1073741824 --wrap=true
  if [ "$status" -eq 0 ]; then
    job=${output##*$'\n'}
    wait_state "$job" COMPLETED
  else
    assert_refused "--morph-batch" "at most 1048576 accumulation steps"
  fi
  submit --morph-model=layers=1,hidden=1,heads=1,seq=1 --morph-batch=1048577 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  grep -q '^MORPH_PLAN=' "$JOBS/$job.out"
  [ "$(sed -n 's/^MORPH_MICRO_BATCH=//p' "$JOBS/$job.out")" -le 1048576 ]
  [ "$(sed -n 's/^MORPH_GA=//p' "$JOBS/$job.out")" -le 1048576 ]
  [ -z "$(drained_nodes)" ]
}

@test "issue 10 (2): slurmctld stopped longer than MessageTimeout as a Morph job starts: the job runs, no node drains" {
  submit -H --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  local i
  release_with_stalled_controller "$job" 25
  for i in $(seq 240); do [ "$(job_state "$job")" = COMPLETED ] && break; sleep 0.5; done
  [ "$(job_state "$job")" = COMPLETED ]
  # It ran after the stall (its batch step waited for its plan), with its plan, on its
  # first start.
  local run_time
  run_time=$(job_field "$job" RunTime)
  [ $((10#${run_time: -2} + 60 * 10#${run_time: -5:2})) -ge 15 ] || { echo "RunTime=$run_time" >&2; false; }
  grep -q '^MORPH_PLAN=' "$JOBS/$job.out"
  [ "$(job_field "$job" Restarts)" = 0 ]
  [ -z "$(drained_nodes)" ]
}

@test "issue 10 (2): when slurmctld outlasts the plan reads, the task exits 75 and the job is requeued, never a false COMPLETED" {
  cp "$MORPH_TESTCLUSTER_DIR/plugstack.conf" "$MORPH_TESTCLUSTER_DIR/plugstack.conf.orig"
  sed -i 's|spank_morph.so$|spank_morph.so plan_tries=1|' "$MORPH_TESTCLUSTER_DIR/plugstack.conf"
  submit -H --open-mode=append --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  release_with_stalled_controller "$job" 25
  local i
  for i in $(seq 300); do [ "$(job_state "$job")" = COMPLETED ] && break; sleep 0.5; done
  mv "$MORPH_TESTCLUSTER_DIR/plugstack.conf.orig" "$MORPH_TESTCLUSTER_DIR/plugstack.conf"
  [ "$(job_state "$job")" = COMPLETED ]
  # The first start said why it did not run and exited 75 (RequeueExit=75 requeued it);
  # the second ran with its plan.
  grep -q "morph: job $job: slurmctld did not give the job's plan (1 try" "$JOBS/$job.out"
  grep -q "exits with 75" "$JOBS/$job.out"
  [ "$(job_field "$job" Restarts)" -ge 1 ]
  grep -q '^SLURM_RESTART_COUNT=1$' "$JOBS/$job.out"
  grep -q '^MORPH_PLAN=' "$JOBS/$job.out"
  [ "$(job_field "$job" ExitCode)" = 0:0 ]
  [ -z "$(drained_nodes)" ]
}

@test "plugstack.conf arguments slurmstepd refuses fail Morph jobs with 78 and a reason, not every job of the node" {
  # A failing slurm_spank_init in slurmstepd fails every step on the node, plain jobs too.
  submit -H --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  local morph=$job plain
  submit -H --wrap 'echo plain ran'
  [ "$status" -eq 0 ]
  plain=$job
  cp "$MORPH_TESTCLUSTER_DIR/plugstack.conf" "$MORPH_TESTCLUSTER_DIR/plugstack.conf.orig"
  sed -i 's|spank_morph.so$|spank_morph.so plan_tries=many|' "$MORPH_TESTCLUSTER_DIR/plugstack.conf"
  scontrol release "$morph" "$plain"
  local ended=0
  wait_state "$plain" COMPLETED && wait_state "$morph" FAILED || ended=1
  mv "$MORPH_TESTCLUSTER_DIR/plugstack.conf.orig" "$MORPH_TESTCLUSTER_DIR/plugstack.conf"
  [ "$ended" = 0 ]
  grep -q "plain ran" "$JOBS/$plain.out"
  grep -q "morph: plugstack.conf gives spank_morph arguments this node refuses" "$JOBS/$morph.out" ||
    fail "$(cat "$JOBS/$morph.out")"
  [ "$(job_field "$morph" ExitCode)" = 78:0 ]
  [ -z "$(drained_nodes)" ]
}

@test "issue 10 (2): a job start costs slurmctld one plan read, whatever its steps and nodes" {
  cat >"$JOBS/steps.sh" <<'EOF'
#!/bin/bash
for i in $(seq 10); do
  srun --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 bash -c '[ -n "$MORPH_PLAN" ]' || exit 1
done
echo "steps ok"
EOF
  chmod 755 "$JOBS/steps.sh"
  local before after i
  before=$(plan_reads)
  submit --morph-model=llama-30b --morph-batch=256 --morph-gpus=16 "$JOBS/steps.sh"
  [ "$status" -eq 0 ]
  for i in $(seq 240); do [ "$(job_state "$job")" = COMPLETED ] && break; sleep 0.5; done
  after=$(plan_reads)
  [ "$(job_state "$job")" = COMPLETED ]
  grep -q "steps ok" "$JOBS/$job.out"
  # 20 step starts on 2 nodes (21 reads before: one per node per step, and the batch step).
  echo "# plan reads for 1 batch step and 20 step starts: $((after - before))" >&3
  [ $((after - before)) -le 2 ]
}

@test "issue 10 (3): --export=NONE, SBATCH_EXPORT=NONE and --export=HOME,PATH jobs see their plan" {
  local jobs=() j
  printf '#!/bin/sh\nenv | grep "^MORPH_" | sort\n' >"$JOBS/plan.sh"
  chmod 755 "$JOBS/plan.sh"
  submit --export=NONE --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/plan.sh"
  jobs+=("$job")
  SBATCH_EXPORT=NONE submit --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/plan.sh"
  jobs+=("$job")
  submit --export=HOME,PATH --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/plan.sh"
  jobs+=("$job")
  for j in "${jobs[@]}"; do
    wait_state "$j" COMPLETED
    grep -qx "MORPH_PLAN=$(job_record "$j" | tr ' ' '\n' | grep -E '^(dp|tp|pp|zero|offload|gc|ga|mb|mbs)=' | tr '\n' ' ' | sed 's/ $//')" "$JOBS/$j.out" ||
      { echo "job $j:" >&2; cat "$JOBS/$j.out" >&2; false; }
  done
}

@test "sbatch inside a Morph job: without --morph-* options a plain job, with them a Morph job of its own" {
  # Slurm passes the job's own options on to every sbatch of its script
  # (SLURM_SPANK__SLURM_SPANK_OPTION_morph_*): they are not the nested job's. A script
  # that submits itself again gives them in its #SBATCH lines, with the same values: it
  # stays a Morph job (it became a plain one until 2026-12-03). A nested Morph job takes
  # none of the surrounding job's options (it took those it left out: --morph-iterations),
  # also when sbatch reads its script from standard input (the surrounding job's options
  # overrode its #SBATCH lines, and being equal to them made it a plain job), and no plain
  # job sees the surrounding job's plan (MORPH_PLAN, MORPH_RECORD, ...).
  cat >"$JOBS/piped.sh" <<'EOF'
#!/bin/sh
#SBATCH --morph-model=gpt2-1.5b
#SBATCH --morph-batch=64
echo "MORPH_PLAN=$MORPH_PLAN"
EOF
  cat >"$JOBS/again.sh" <<'EOF'
#!/bin/sh
#SBATCH --morph-model=llama2-7b
  # a comment, then more #SBATCH lines
#SBATCH --morph-batch=512
echo "MORPH_PLAN=$MORPH_PLAN"
EOF
  cat >"$JOBS/nested.sh" <<EOF
#!/bin/sh
sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" --wrap 'env | grep -E "SLURM_SPANK_|^MORPH_(PLAN|DP|TP|GA|MODEL|GLOBAL_BATCH|RECORD)" | sort; echo plain ok' >"$JOBS/\$SLURM_JOB_ID.plain"
sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" <"$JOBS/piped.sh" >"$JOBS/\$SLURM_JOB_ID.piped"
sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" --morph-model=gpt2-1.5b --morph-batch=32 --wrap 'echo "MORPH_PLAN=\$MORPH_PLAN"' >"$JOBS/\$SLURM_JOB_ID.morph"
sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" "$JOBS/again.sh" >"$JOBS/\$SLURM_JOB_ID.again"
EOF
  chmod 755 "$JOBS/nested.sh" "$JOBS/again.sh"
  submit --morph-model=llama2-7b --morph-batch=512 --morph-iterations=1000 "$JOBS/nested.sh"
  [ "$status" -eq 0 ]
  [ "$(record_value "$job" iterations)" = 1000 ] || fail "$(job_record "$job")"
  wait_state "$job" COMPLETED
  local plain morph again piped
  plain=$(cat "$JOBS/$job.plain") morph=$(cat "$JOBS/$job.morph") again=$(cat "$JOBS/$job.again")
  piped=$(cat "$JOBS/$job.piped")
  [ -n "$plain" ] && [ -n "$morph" ] && [ -n "$again" ] && [ -n "$piped" ] || fail "$(cat "$JOBS/$job.out")"
  [ "$(record_value "$piped" model)" = gpt2-1.5b ] && [ "$(record_value "$piped" batch)" = 64 ] &&
    [ -z "$(record_value "$piped" iterations)" ] ||
    fail "a script read from standard input took the surrounding job's options: $(job_record "$piped")"
  [ "$(record_value "$again" model)" = llama2-7b ] && [ "$(record_value "$again" batch)" = 512 ] ||
    fail "the resubmitted script is not a Morph job: $(job_record "$again")"
  [ -z "$(record_value "$again" iterations)" ] && [ -z "$(record_value "$morph" iterations)" ] ||
    fail "a nested job took the surrounding one's --morph-iterations: $(job_record "$again"); $(job_record "$morph")"
  wait_state "$again" COMPLETED
  grep -q "^MORPH_PLAN=dp=" "$JOBS/$again.out" || fail "$(cat "$JOBS/$again.out")"
  wait_state "$plain" COMPLETED || fail "$(cat "$JOBS/$job.out")"
  wait_state "$morph" COMPLETED
  grep -q "plain ok" "$JOBS/$plain.out" || fail "$(cat "$JOBS/$plain.out")"
  ! grep -qi "morph" "$JOBS/$plain.out" || fail "the nested job took the surrounding one's request: $(cat "$JOBS/$plain.out")"
  [ -z "$(job_record "$plain")" ] || fail "the plain job has a record: $(job_record "$plain")"
  [ "$(record_value "$morph" model)" = gpt2-1.5b ] && [ "$(record_value "$morph" batch)" = 32 ] || fail "$(job_record "$morph")"
  grep -q "^MORPH_PLAN=dp=" "$JOBS/$morph.out" || fail "$(cat "$JOBS/$morph.out")"
  wait_state "$piped" COMPLETED
  grep -q "^MORPH_PLAN=dp=" "$JOBS/$piped.out" || fail "$(cat "$JOBS/$piped.out")"
}

@test "a Morph job inside an adaptive-batch Morph job sees no MORPH_ADAPTIVE_BATCH of the surrounding job" {
  # plan_environment sets MORPH_ADAPTIVE_BATCH (and MORPH_GA or MORPH_GPU_GROUPS) for some
  # plans only; the nested job's batch step, its steps and srun in a nested salloc kept the
  # surrounding job's beside their own plan, and a trainer adapted a batch it never asked to.
  cat >"$JOBS/inner.sh" <<'EOF'
#!/bin/sh
echo "batch adaptive=${MORPH_ADAPTIVE_BATCH-unset} ga=${MORPH_GA-unset}"
srun -n1 sh -c 'echo "step adaptive=${MORPH_ADAPTIVE_BATCH-unset}"'
EOF
  cat >"$JOBS/outer.sh" <<'EOF'
#!/bin/sh
echo "outer adaptive=${MORPH_ADAPTIVE_BATCH-unset}"
sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" --morph-model=gpt2-1.5b --morph-batch=16 --morph-gpus=1 \
  "$JOBS/inner.sh" >"$JOBS/$SLURM_JOB_ID.nested"
timeout 120 salloc --morph-model=gpt2-1.5b --morph-batch=16 --morph-gpus=1 \
  srun -n1 sh -c 'echo "salloc adaptive=${MORPH_ADAPTIVE_BATCH-unset}"'
EOF
  chmod 755 "$JOBS/inner.sh" "$JOBS/outer.sh"
  submit --morph-model=gpt2-1.5b --morph-batch=16 --morph-gpus=1 --morph-adaptive-batch=16:128 "$JOBS/outer.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED 180
  grep -qx "outer adaptive=16:128" "$JOBS/$job.out" || fail "$(cat "$JOBS/$job.out")"
  grep -qx "salloc adaptive=unset" "$JOBS/$job.out" || fail "$(cat "$JOBS/$job.out")"
  local nested
  nested=$(cat "$JOBS/$job.nested")
  [ -n "$nested" ] || fail "$(cat "$JOBS/$job.out")"
  wait_state "$nested" COMPLETED 120
  grep -qx "batch adaptive=unset ga=$(record_value "$nested" ga)" "$JOBS/$nested.out" || fail "$(cat "$JOBS/$nested.out")"
  grep -qx "step adaptive=unset" "$JOBS/$nested.out" || fail "$(cat "$JOBS/$nested.out")"
}

@test "issue 10 (4): upper-case keys of an inline model are the same keys" {
  submit -H --morph-model=layers=24,hidden=2048,heads=16,seq=2048,VOCAB=50257 --morph-batch=64 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  local upper=$output
  scancel "$job"
  submit -H --morph-model=LAYERS=24,HIDDEN=2048,HEADS=16,SEQ=2048,vocab=50257 --morph-batch=64 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  scancel "$job"
  submit -H --morph-model=layers=24,hidden=2048,heads=16,seq=2048,vocab=50257 --morph-batch=64 "$JOBS/env.sh"
  scancel "$job"
  # The same sizing for all three (a 50,257-parameter model would fit one GPU at a
  # fraction of the time).
  [ "$(grep -o -- '-> .*' <<<"$upper")" = "$(grep -o -- '-> .*' <<<"$output")" ]
  run sbatch --morph-model=layers=2,hidden=8,heads=2,seq=4,DEPTH=3 --morph-batch=8 "$JOBS/env.sh"
  assert_refused "--morph-model" "unknown key 'DEPTH'"
}

@test "issue 10 (5): the owner cannot change a Morph job's GPUs or nodes without its plan" {
  chmod 1777 "$JOBS"
  run runuser -u nobody -- sbatch --parsable -H -D "$JOBS" -o /dev/null --morph-model=gpt2-1.5b --morph-batch=16 --wrap=true
  [ "$status" -eq 0 ]
  local user_job=${output##*$'\n'}
  run runuser -u nobody -- scontrol update job="$user_job" TresPerNode=gres:gpu:a100-80g:8
  [ "$status" -ne 0 ]
  [[ "$output" == *"Invalid generic resource (gres) specification"* ]] || fail "error code" "$output"
  grep -q "job $user_job: update refused: morph: TresPerNode=gres:gpu:a100-80g:8 does not match the job's plan" \
    "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  run runuser -u nobody -- scontrol update job="$user_job" NumNodes=2
  [ "$status" -ne 0 ]
  [[ "$output" == *"Node count specification invalid"* ]] || fail "error code" "$output"
  # Clearing the GPU request is a change too.
  run runuser -u nobody -- scontrol update job="$user_job" TresPerNode=
  [ "$status" -ne 0 ]
  grep -q "job $user_job: update refused: morph: TresPerNode= (no GPUs) does not match the job's plan" \
    "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  [ "$(job_field "$user_job" TresPerNode)" = gres:gpu:a100-80g:1 ]
  [ "$(job_field "$user_job" NumNodes)" = 1-1 ]
  # What does not touch the plan still goes through.
  run runuser -u nobody -- scontrol update job="$user_job" TimeLimit=30
  [ "$status" -eq 0 ]
  scancel "$user_job"
}

@test "issue 10 (6): salloc and srun inside it run one task per GPU with the plan; srun cannot size a job itself" {
  run timeout 120 salloc --morph-model=bert-336m --morph-batch=64 --morph-gpus=2 \
    bash -c 'srun bash -c "echo task \$SLURM_PROCID/\$SLURM_NTASKS cpus=\$SLURM_CPUS_PER_TASK plan=\$MORPH_DP"'
  [ "$status" -eq 0 ] || { echo "$output" >&2; false; }
  [ "$(grep -c '^task [01]/2 cpus=4 plan=' <<<"$output")" -eq 2 ] || { echo "$output" >&2; false; }
  run timeout 60 srun --morph-model=gpt2-1.5b --morph-batch=16 true
  assert_refused "srun cannot size a job itself" "salloc --morph-"
  # A heterogeneous job runs the plugin once per component, the options staying set.
  run sbatch --morph-model=gpt2-1.5b --morph-batch=16 -o /dev/null --wrap true : -n1 --wrap true
  assert_refused "cannot be given to a heterogeneous job"
  # Nor does a request set by hand in srun's environment, which srun copies into the job
  # it makes before the plugin runs: the job is a plain one.
  run timeout 60 env SLURM_SPANK_MORPH_REQUEST_MODEL=gpt2-1.5b SLURM_SPANK_MORPH_REQUEST_BATCH=16 \
    srun -N1 bash -c 'echo "job=$SLURM_JOB_ID request=${SLURM_SPANK_MORPH_REQUEST_MODEL:-none}"'
  [ "$status" -eq 0 ] || { echo "$output" >&2; false; }
  grep -q "request=none" <<<"$output" || { echo "$output" >&2; false; }
  local plain
  plain=$(sed -n 's/^job=\([0-9]*\) .*/\1/p' <<<"$output")
  [ -n "$plain" ] && [ -z "$(job_record "$plain")" ] || { echo "$output; record: $(job_record "$plain")" >&2; false; }
}

@test "issue 10 (7): user options are honoured by sizing or refused, never left to make a job unschedulable" {
  # -c 20: 20 CPUs per GPU fit only the a100 nodes (32 CPUs); it runs.
  submit -c 20 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" type)" = a100-80g ]
  [ "$(job_field "$job" CPUs/Task)" = 20 ]
  # --mincpus=64: no node has 64 CPUs.
  run sbatch --mincpus=64 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  assert_refused "fewer than --mincpus=64"
  # -w and --constraint choose the GPU type.
  submit -w v100-1 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" type)" = v100-32g ]
  submit --constraint=v100-32g --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  wait_state "$job" COMPLETED
  [ "$(record_value "$job" type)" = v100-32g ]
  # --cpus-per-gpu=2 becomes CPUs per task, without a CpusPerTres beside it.
  submit -H --cpus-per-gpu=2 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  [ "$(job_field "$job" CPUs/Task)" = 2 ]
  ! scontrol show job "$job" | grep -q 'CpusPerTres=' || fail "$(scontrol show job "$job")"
  scancel "$job"
  # Licences and the user's other requests are kept.
  submit -H -L morphlic:1 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  [ "$(job_field "$job" Licenses)" = morphlic:1 ]
  scancel "$job"
  run sbatch -n 4 --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  assert_refused "-n/--ntasks" "one task per GPU"
}

@test "issue 10 (8): job_modify canonicalises records and checks their counts" {
  submit -H --morph-model=gpt2-1.5b --morph-batch=16 "$JOBS/env.sh"
  [ "$status" -eq 0 ]
  run scontrol update job="$job" AdminComment="$(job_record "$job" | sed 's/ type=a100-80g / type=A100 /')"
  [ "$status" -eq 0 ]
  [ "$(job_field "$job" TresPerNode)" = gres:gpu:a100-80g:1 ]
  [ "$(record_value "$job" type)" = a100-80g ]
  run scontrol update job="$job" AdminComment="$(job_record "$job" | sed 's/ cpus_per_gpu=4 / cpus_per_gpu=65540 /')"
  [ "$status" -ne 0 ]
  run scontrol update job="$job" AdminComment="$(job_record "$job" | sed 's/ nodes=1 / nodes=3 /; s/ pp=1 / pp=3 /; s/ ga=4 / ga=1 /; s/ mb=1 / mb=4 /')"
  [ "$status" -ne 0 ]
  grep -q "nodes=3 but morph.conf lists 2 nodes" "$MORPH_TESTCLUSTER_DIR/log/slurmctld.log"
  [ "$(job_field "$job" CPUs/Task)" = 4 ]
  scancel "$job"
}
