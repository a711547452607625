#!/usr/bin/env bats
# Two node types of one GPU type, an 8-GPU and a 4-GPU A100 node, where the GPU type is a
# node feature (GpuTypeBy=feature) and each node type has a feature of its own
# (emu-a100-80g-8, emu-a100-80g-4): job_submit_morph's constraint names every node type
# that holds the plan's GPUs per node, ORed, and ANDs the user's -C with it; real Slurm
# parses it and runs the job on such a node. A root update of the record to the other
# node type is accepted and moves the job there. (Until stop 58 the constraint named the
# first node type of the GPU type: a 1 x 8 plan asked for the 4-GPU node and never ran.)
#
# Its own cluster (port 18960, /tmp/morph-testcluster-types). Needs root, Slurm and munge;
# otherwise the test is skipped with the reason.

bats_require_minimum_version 1.5.0
load cluster

setup_file() {
  export MORPH_TESTCLUSTER_GPU_TYPE_BY=feature MORPH_TESTCLUSTER_NODE_FEATURES=node-type
  CLUSTER_NODES=1x8xa100-80g,1x4xa100-80g cluster_setup 18960 /tmp/morph-testcluster-types
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  export JOBS="$MORPH_TESTCLUSTER_DIR/jobs" work="$MORPH_TESTCLUSTER_DIR/jobs"  # work: job_control.bash's
  install -d -m 1777 "$JOBS"
}

die() { fail "$@"; }

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
}

teardown() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || return 0
  local jobs
  jobs=$(squeue -h -o %A)
  [ -z "$jobs" ] || scancel $jobs
}

teardown_file() { cluster_teardown; }

# held GPUS [ARGS...]: a held Morph job of gpt2-1.5b, batch 16, on GPUS GPUs; its id in $job.
held() {
  local gpus=$1
  shift
  run sbatch --parsable -H -D "$JOBS" -o "$JOBS/%j.out" --morph-model=gpt2-1.5b --morph-batch=16 \
    --morph-gpus="$gpus" "$@" --wrap 'echo "ran on $SLURMD_NODENAME: $MORPH_PLAN"'
  [ "$status" -eq 0 ] || fail "sbatch: $output"
  job=${output##*$'\n'}
}

# runs_on JOB NODE: the job completes on NODE, with its plan.
runs_on() {
  scontrol release "$1"
  wait_state "$1" COMPLETED 60 || fail "job $1 did not run: $(scontrol show job "$1")"
  grep -q "^ran on $2: dp=" "$JOBS/$1.out" || fail "job $1: $(cat "$JOBS/$1.out")"
}

@test "two node types of one GPU type: the constraint ORs the node types that hold the plan, under the user's -C" {
  held 4 -C a100-80g
  local four=$job
  [ "$(record_value "$four" gpus_per_node)" = 4 ] || fail "$(job_record "$four")"
  [ "$(job_field "$four" Features)" = "(a100-80g)&(emu-a100-80g-8|emu-a100-80g-4)" ] ||
    fail "Features=$(job_field "$four" Features)"
  held 8 -C a100-80g
  local eight=$job
  [ "$(job_field "$eight" Features)" = "(a100-80g)&emu-a100-80g-8" ] || fail "Features=$(job_field "$eight" Features)"
  runs_on "$eight" a100-1
  # The 4-GPU job may take either node; the 8-GPU one ended, so both are free.
  scontrol release "$four"
  wait_state "$four" COMPLETED 60 || fail "job $four did not run: $(scontrol show job "$four")"
  grep -qE "^ran on a100-[12]: dp=" "$JOBS/$four.out" || fail "$(cat "$JOBS/$four.out")"
}

@test "two node types of one GPU type: a root update to a record of the other node type moves the held job there" {
  held 8
  local eight=$job
  held 4
  local four=$job
  [ "$(job_field "$four" Features)" = "emu-a100-80g-8|emu-a100-80g-4" ] || fail "Features=$(job_field "$four" Features)"
  run scontrol update job="$four" AdminComment="$(job_record "$eight")"
  [ "$status" -eq 0 ] || fail "the update was refused: $output"
  [ "$(record_value "$four" gpus_per_node)" = 8 ] || fail "$(job_record "$four")"
  [ "$(job_field "$four" Features)" = emu-a100-80g-8 ] || fail "Features=$(job_field "$four" Features)"
  scancel "$eight"
  runs_on "$four" a100-1
}
