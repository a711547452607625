# Shared by the bats files that run morphd on a local Slurm cluster of their own
# (morphd.bats, morphd_hetero.bats): jobs of the reference trainer under
# `morphrun --driver` in $WORK, waits on Slurm and on files, and the loss check against
# the uninterrupted run in $WORK/reference.loss.
# shellcheck shell=bash

# morphd_setup PORT DIR MORPHD_PORT [MORPH.CONF LINE...]: in setup_file, after setting
# CLUSTER_NODES and TRAINER_ARGS. A cluster of its own, $WORK, a morph.conf that sends
# the jobs' reports to morphd (no online refit: the emulated speed follows the model, a
# refit would chase its own tail), and the reference run of TRAINER_ARGS on one rank, of
# REFERENCE_STEPS (default 3000) steps.
morphd_setup() {
  local port=$1 dir=$2 morphd_port=$3 line
  shift 3
  cluster_setup "$port" "$dir" daemon/morphd launcher/morphrun tests/trainer/morph-trainer
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  export WORK="$MORPH_TESTCLUSTER_DIR/work" MORPH_FRAMEWORKS="$MORPH_SRCDIR/share/frameworks" TRAINER_ARGS
  rm -rf "$WORK"
  install -d -m 1777 "$WORK"
  # A restart costs about 25 s on this cluster: that is what a job must run before it
  # moves again.
  { cat "$MORPH_CONF"; echo "MorphdAddress=127.0.0.1:$morphd_port"; echo "RestartPenaltySeconds=30"
    echo "RefitErrorThreshold=0"; echo "SchedulingIntervalSeconds=5"
    for line in "$@"; do echo "$line"; done; } >"$WORK/morph.conf"
  export MORPH_CONF="$WORK/morph.conf" OMPI_MCA_btl=self,tcp OMPI_MCA_mpi_yield_when_idle=1
  timeout 300 srun -N1 -n1 -p gpu --mpi=pmix "$MORPH_BUILDDIR/tests/trainer/morph-trainer" --layout dp=1 $TRAINER_ARGS \
    --steps "${REFERENCE_STEPS:-3000}" --quiet --loss-log "$WORK/reference.loss" >"$WORK/reference.out" 2>&1
}

wait_state() {  # JOB STATE SECONDS
  local i state
  for i in $(seq $(($3 * 5))); do
    state=$(job_field "$1" JobState)
    [ "$state" = "$2" ] && return 0
    case $state in FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
      break ;;
    esac
    sleep 0.2
  done
  fail "job $1 is $state after $3 s, expected $2" "$(tail -n 20 "$WORK/morphd.log" 2>/dev/null)" \
    "$(tail -n 20 "$WORK/$1.out" 2>/dev/null)"
}

# wait_done JOB NAME: the job completes, however slowly the machine runs it, so long as
# its metrics file ($WORK/NAME/metrics) grows: no new line in 150 s (a hang; a restart
# takes about 30 s here) fails, with the job's last steps.
wait_done() {
  local job=$1 metrics="$WORK/$2/metrics" state size last=-1 quiet=0
  while :; do
    state=$(job_field "$job" JobState)
    [ "$state" = COMPLETED ] && return 0
    case $state in FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
      break ;;
    esac
    size=$(stat -c %s "$metrics" 2>/dev/null || echo 0)
    if [ "$size" = "$last" ]; then
      quiet=$((quiet + 1))
      [ "$quiet" -lt 750 ] || break
    else
      last=$size quiet=0
    fi
    sleep 0.2
  done
  # The short report last: CI logs keep a failure's first and last lines.
  fail "job $job is $state, expected COMPLETED ($((quiet / 5)) s without a new metrics line)" \
    "$(tail -n 20 "$WORK/morphd.log" 2>/dev/null)" "$(tail -n 20 "$WORK/$job.out" 2>/dev/null)" \
    "$(hang_report "$job")" "last lines of $metrics:" "$(tail -n 3 "$metrics" 2>/dev/null | cut -c1-120)"
}

# hang_report JOB: where a job that stopped reporting stands: its steps, and the state and
# wait channel of every step daemon, srun, morphrun and trainer process on the machine.
hang_report() {
  echo "steps of job $1: $(squeue -h -s -j "$1" -o '%i(%N)' 2>&1 | tr '\n' ' ')"
  echo "processes (pid ppid seconds state name wchan):"
  ps -eo pid,ppid,etimes,stat,comm,wchan:24 | awk '$5 ~ /^(slurmstepd|srun|morphrun|morph-trainer)$/'
}

wait_grep() {  # FILE PATTERN SECONDS [COUNT]
  local i
  for i in $(seq $(($3 * 5))); do
    [ "$(grep -c -- "$2" "$1" 2>/dev/null || true)" -ge "${4:-1}" ] 2>/dev/null && return 0
    sleep 0.2
  done
  fail "no '$2' (${4:-1} times) in $1 after $3 s" "$(tail -n 30 "$1" 2>/dev/null)"
}

# job NAME STEPS [TRAINER OPTION...]: the batch script of a job in $WORK/NAME, whose steps
# last EMULATE (default 0.5) times the predicted iteration time.
job() {
  local name=$1 steps=$2
  shift 2
  rm -rf "${WORK:?}/$name"
  mkdir -p "$WORK/$name"
  cat >"$WORK/$name/job.sh" <<EOS
#!/bin/bash
exec "$MORPH_BUILDDIR/launcher/morphrun" --driver --framework torch --mpi-trainer --checkpoint "$WORK/$name/ckpt" \\
  --metrics "$WORK/$name/metrics" -- "$MORPH_BUILDDIR/tests/trainer/morph-trainer" $TRAINER_ARGS --steps $steps \\
  --loss-log "$WORK/$name/loss" --quiet --emulate-speed ${EMULATE:-0.5} $*
EOS
  chmod 755 "$WORK/$name/job.sh"
  chmod 777 "$WORK/$name"
}

# submit NAME SBATCH_OPTION...: prints the job id (bert-336m, batch BATCH or 64).
submit() {
  local name=$1
  shift
  sbatch --parsable --requeue --open-mode=append -D "$WORK" -o "$WORK/%j.out" --morph-model=bert-336m \
    --morph-batch="${BATCH:-64}" "$@" "$WORK/$name/job.sh"
}

# start_morphd [VAR=VALUE...]: morphd in the foreground, logging to $WORK/morphd.log.
start_morphd() {
  env "$@" "$MORPH_BUILDDIR/daemon/morphd" -D --poll 0.5 >>"$WORK/morphd.log" 2>&1 &
  echo $! >"$WORK/morphd.pid"
}
# stop_morphd: SIGTERM, then waits until it has exited (its lock on the state database
# with it) for at most 30 s.
stop_morphd() {
  local pid i
  [ -s "$WORK/morphd.pid" ] || return 0
  pid=$(cat "$WORK/morphd.pid")
  kill "$pid" 2>/dev/null || true
  for i in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  rm -f "$WORK/morphd.pid"
}

# loss_continues NAME STEPS: every step of the job is in its loss log (the last line of a
# step run twice counts) and within 1e-5 of the uninterrupted run ($WORK/$REFERENCE,
# default reference.loss). STEPS 0: up to the last step it logged (a job cancelled on
# its way).
loss_continues() {
  python3 - "$WORK/${REFERENCE:-reference.loss}" "$WORK/$1/loss" "$2" <<'PY' || fail "job $1: the loss did not continue"
import sys
ref = dict(line.split() for line in open(sys.argv[1]))
got = dict(line.split() for line in open(sys.argv[2]))
steps = {str(s) for s in range(1, (int(sys.argv[3]) or max(map(int, got), default=0)) + 1)}
assert steps, "no step"
assert set(got) == steps, ("missing", sorted(steps - set(got), key=int)[:5], len(got))
worst = max(abs(float(got[s]) - float(ref[s])) / abs(float(ref[s])) for s in got)
print("max_rel_loss_diff=%.3g" % worst)
sys.exit(0 if worst <= 1e-5 else 1)
PY
}

# grow_to_two_nodes JOB: a held job's record and request as morphd would have grown it:
# the same plan on two nodes (dp doubled, micro-batch or accumulation halved).
grow_to_two_nodes() {
  local record
  record=$(job_record "$1" | python3 -c 'import sys
f = dict(kv.split("=", 1) for kv in sys.stdin.read().split()[1:])
f["nodes"] = "2"; f["dp"] = str(2 * int(f["dp"]))
if int(f["mbs"]) % 2 == 0: f["mbs"] = str(int(f["mbs"]) // 2)
else: f["ga"] = str(int(f["ga"]) // 2)
print("morph:v1 " + " ".join(k + "=" + v for k, v in f.items()))')
  scontrol update job="$1" AdminComment="$record" NumNodes=2
  [ "$(job_field "$1" NumNodes)" = 2-2 ] || fail "$(scontrol show job "$1")"
}
