#!/usr/bin/env bats
# morphrun --driver between its steps, against a stand-in slurmctld (driver/fake_slurm.c,
# preloaded: the job's record is a file) and srun (driver/srun: local tasks): a reshard
# that failed after its commit, the checkpoint signal during an in-place replan, and a
# shrink slurmctld refuses. With Slurm: tests/cluster/launcher.bats.

bats_require_minimum_version 1.5.0
load common

setup_file() {
  : "${MORPH_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
  : "${MORPH_BUILDDIR:=$MORPH_SRCDIR/build}"
  [ -x "$MORPH_BUILDDIR/launcher/morphrun" ] || export DRIVER_SKIP="morphrun was not built (configure found no Slurm, Open MPI or hwloc)"
  [ -f "$MORPH_BUILDDIR/tests/cli/driver/.libs/fake_slurm.so" ] || export DRIVER_SKIP="${DRIVER_SKIP:-tests/cli/driver/fake_slurm.so was not built}"
}

setup() {
  [ -z "${DRIVER_SKIP:-}" ] || skip "$DRIVER_SKIP"
  : "${MORPH_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
  : "${MORPH_BUILDDIR:=$MORPH_SRCDIR/build}"
  W=$BATS_TEST_TMPDIR
  mkdir -p "$W/ckpt"
  printf 'DriverPollSeconds=0.5\nCheckpointTimeoutSeconds=30\n' >"$W/morph.conf"
  export FAKE_ADMIN=$W/admin FAKE_NODES=localhost FAKE_STEPS=$W/steps SLURM_JOB_ID=4242 SLURM_SUBMIT_DIR=$W
  export PATH="$MORPH_SRCDIR/tests/cli/driver:$PATH" MORPH_FRAMEWORKS="$MORPH_SRCDIR/share/frameworks"
  # The sanitizer build's morphrun: the stand-in comes before its runtime, and
  # LeakSanitizer cannot attribute Open MPI's own allocations in the reshard step (see
  # tests/trainer/continuity.sh).
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
  unset MORPH_RECORD MORPH_PLAN_ERROR SLURM_STEP_ID FAKE_UPDATE_FAIL FAKE_RESHARD_RC
}

# record NODES ZERO: gpt2-1.5b, batch 16, NODES nodes of 2 a100-80g, data parallel.
record() {
  echo "morph:v1 model=gpt2-1.5b batch=16 seq=1024 sla=best-effort sla_given=0 framework=torch plans=all" \
    "gpus=1-0 gpu_types=- base_plan=- type=a100-80g nodes=$1 gpus_per_node=2 cpus_per_gpu=1 dp=$((2 * $1))" \
    "tp=1 pp=1 zero=$2 offload=0 gc=0 ga=1 mb=1 mbs=$((8 / $1)) iter_ms=100.000"
}

# wait_grep FILE PATTERN SECONDS
wait_grep() {
  local i
  for i in $(seq $(($3 * 5))); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "no '$2' in $1 after $3 s: $(cat "$W/out")"
}

# driver [OPTION...]: morphrun --driver in the background, its pid in $driver.
driver() {
  LD_PRELOAD="$MORPH_BUILDDIR/tests/cli/driver/.libs/fake_slurm.so" "$MORPH_BUILDDIR/launcher/morphrun" --driver "$@" \
    --config "$W/morph.conf" --checkpoint "$W/ckpt" --metrics "$W/metrics" -- "$MORPH_SRCDIR/tests/cli/driver/trainer.sh" \
    >"$W/out" 2>&1 &
  driver=$!
}

# ends_with CODE: the driver exits with CODE.
ends_with() {
  local rc=0
  wait "$driver" || rc=$?
  [ "$rc" -eq "$1" ] || fail "morphrun --driver exited $rc, not $1: $(cat "$W/out")"
}

@test "a reshard step that fails after its commit is not run again: the job starts from what it committed" {
  "$MORPH_BUILDDIR/tests/cli/make_checkpoint" "$W/ckpt/step_7" dp=2,tp=1,pp=1,zero=0 4 256 4096
  record 1 1 >"$FAKE_ADMIN"  # restarted under zero=1: the checkpoint is in zero=0
  FAKE_RESHARD_RC=1 STEPS=3 driver
  ends_with 0
  grep -q "reshard committed exit=1" "$W/metrics" || fail "$(grep '^#' "$W/metrics")"
  [ "$(grep -c morph-reshard-mpi "$W/steps.log")" -eq 1 ] || fail "$(cat "$W/steps.log")"
  grep -q "start layout=dp=2,tp=1,pp=1,zero=1" "$W/metrics"
  [ -f "$W/ckpt/step_7.dp2-tp1-pp1-z1/index.json" ]
  # Its tasks resume from what the driver chose, not each from its own listing of the folder.
  [ "$(grep -c "choice=$W/ckpt/step_7.dp2-tp1-pp1-z1 load=$W/ckpt/step_7.dp2-tp1-pp1-z1$" "$W/out")" -eq 2 ] || fail "$(cat "$W/out")"
}

@test "with --mpi none one task reshards (each task would be a world of its own writing the same copy)" {
  "$MORPH_BUILDDIR/tests/cli/make_checkpoint" "$W/ckpt/step_7" dp=2,tp=1,pp=1,zero=0 4 256 4096
  record 1 1 >"$FAKE_ADMIN"
  SLURM_JOB_NAME=train-gpt STEPS=3 driver --mpi none
  ends_with 0
  grep -q -- "-N 1 -n 1 .*morph-reshard-mpi" "$W/steps.log" || fail "$(cat "$W/steps.log")"
  # Every step it starts carries the name by which morphd knows the job runs under a driver;
  # the trainer still sees the job's own name (srun gives the tasks the step's).
  [ "$(grep -c -- "--job-name=morphrun-driver " "$W/steps.log")" -eq "$(wc -l <"$W/steps.log")" ] || fail "$(cat "$W/steps.log")"
  grep -q "trainer rank=0 .* job_name=train-gpt " "$W/out" || fail "$(cat "$W/out")"
  ! grep -q "reshard committed exit" "$W/metrics" || fail "$(cat "$W/out")"
  grep -q "start layout=dp=2,tp=1,pp=1,zero=1" "$W/metrics"
}

@test "the checkpoint signal during an in-place replan ends the job for a requeue (75), not a restart in place" {
  record 1 0 >"$FAKE_ADMIN"
  SAVE_S=4 driver
  wait_grep "$W/metrics" "start layout=dp=2,tp=1,pp=1,zero=0" 30
  record 1 1 >"$FAKE_ADMIN"  # morphd: a new plan on the same GPUs
  wait_grep "$W/metrics" "checkpoint reason=replan" 30
  kill -USR2 "$driver"  # morphd: the checkpoint signal to the batch step (a preemption)
  ends_with 75
  grep -q "requeue reason=checkpoint-signal" "$W/metrics" || fail "$(grep '^#' "$W/metrics")"
  [ "$(grep -c "start layout" "$W/metrics")" -eq 1 ] || fail "it restarted in place: $(grep '^#' "$W/metrics")"
}

@test "a run that finishes before its trainers could save is finished (0), not restarted under the new plan" {
  record 1 0 >"$FAKE_ADMIN"
  SILENT=1 STEPS=16 driver  # 4 s, never ready for the signal: its tasks end 0, not 75
  wait_grep "$W/metrics" "start layout=dp=2,tp=1,pp=1,zero=0" 30
  record 1 1 >"$FAKE_ADMIN"  # morphd: a new plan on the same GPUs
  wait_grep "$W/metrics" "checkpoint reason=replan" 30
  ends_with 0
  grep -q "^# .* finished" "$W/metrics" || fail "$(grep '^#' "$W/metrics")"
  [ "$(grep -c "start layout" "$W/metrics")" -eq 1 ] || fail "it ran again: $(grep '^#' "$W/metrics")"
}

@test "a shrink slurmctld refuses ends the job for a requeue onto the plan's nodes (75), not a failure" {
  record 1 0 >"$FAKE_ADMIN"  # one node of the two the job holds
  FAKE_NODES=nodeA,nodeB FAKE_UPDATE_FAIL=1 STEPS=3 driver
  ends_with 75
  grep -q "requeue reason=shrink-refused" "$W/metrics" || fail "$(grep '^#' "$W/metrics")"
  grep -q "slurmctld refused to shrink job 4242 to 1 nodes" "$W/out"
}

@test "--threads reaches the reshard step" {
  "$MORPH_BUILDDIR/tests/cli/make_checkpoint" "$W/ckpt/step_7" dp=2,tp=1,pp=1,zero=0 4 256 4096
  record 1 1 >"$FAKE_ADMIN"
  STEPS=3 driver --threads 3
  ends_with 0
  grep -q -- "morph-reshard-mpi .*--threads 3" "$W/steps.log" || fail "$(cat "$W/steps.log")"
}

@test "a step that exits 75 before its first iteration (Slurm's own checkpoint signal to it) is a requeue, not a failed start" {
  record 1 0 >"$FAKE_ADMIN"
  EXIT_AT_START=75 driver
  ends_with 75
  grep -q "requeue reason=step-exit" "$W/metrics" || fail "$(grep '^#' "$W/metrics")"
  [ "$(grep -c "start layout" "$W/metrics")" -eq 1 ] || fail "it ran the step again: $(grep '^#' "$W/metrics")"
}

@test "a fresh start is one for every task: the driver says it found no checkpoint" {
  record 1 0 >"$FAKE_ADMIN"
  STEPS=2 driver
  ends_with 0
  [ "$(grep -c "choice= load=none$" "$W/out")" -eq 2 ] || fail "$(cat "$W/out")"
}

@test "under sbatch --export=NONE or a list the driver's steps still get what it passes its tasks (--export)" {
  record 1 0 >"$FAKE_ADMIN"
  # The job exports STEPS alone: srun would strip MORPH_DRIVER, the record and the choice.
  SLURM_EXPORT_ENV=STEPS STEPS=2 driver
  ends_with 0
  grep -q -- "--export=STEPS,MORPH_DRIVER,MORPH_JOB_NAME,MORPH_RECORD,MORPH_RECORD_JOB,MORPH_CHECKPOINT_CHOICE,MORPH_SAVE_REQUEST,MORPH_CONF,MORPH_FRAMEWORKS " \
    "$W/steps.log" || fail "$(cat "$W/steps.log")"
  [ "$(grep -c "choice= load=none$" "$W/out")" -eq 2 ] || fail "$(cat "$W/out")"
}
