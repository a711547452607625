#!/usr/bin/env bats
# morphd on the local Slurm cluster (tests/cluster/testcluster), end to end (issue 13).
# The jobs are the reference trainer under `morphrun --driver` at emulated speed (each
# step lasts half the iteration time Morph predicts for its plan on the emulated GPUs);
# every job's loss is compared with one uninterrupted run.
#
#  1. A best-effort job and two guaranteed ones: morphd grows the best-effort job (requeue),
#     shrinks it when the second guaranteed job arrives and grows it back when that one
#     ends. Prints every reconfiguration's overhead and its parts (tests/cluster/overhead.py).
#     (Morphling leaves a job whose GPUs do not change on its plan, Algorithm 1 lines 18-24,
#     so morphd's in-place path is not taken here: see 6.)
#  2. After a shrink, Slurm without slurmdbd refuses the job's updates until it is
#     requeued: an online refit's new plan for it where it runs is carried out by a requeue.
#  3. morphd killed (SIGKILL) after each step of a requeue, and once for long enough that
#     the job restarts on its old plan.
#  4. The trainer killed in the middle of a save: the job goes on from the previous one.
#  5. slurmctld restarted in the middle of a reconfiguration.
#  6. An online refit (a previous morphd's, in the state database) changes the model's mind
#     about a running job's plan: morphd replans it where it runs (the in-place path).
#  7. Fragmented GPUs (2 free on each of two nodes) and a guaranteed job of one node's
#     4: morphd moves a best-effort job to the other node (requeue) to make room.
#
# Its own cluster (port 18870, /tmp/morph-testcluster-morphd, 3 nodes of 4 a100). Needs
# root, Slurm, munge and Open MPI; otherwise every test is skipped with the reason.

bats_require_minimum_version 1.5.0
load cluster
load morphd

setup_file() {
  # The trainer's shape allows every plan of bert-336m (24 layers, 16 heads) on up to 8 GPUs.
  TRAINER_ARGS="--layers 24 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --global-batch 64 --micro-batches 1"
  CLUSTER_NODES=3x4xa100-80g morphd_setup 18870 /tmp/morph-testcluster-morphd 18930
}

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
  [ -s "$WORK/reference.loss" ] || fail "the reference run failed: $(cat "$WORK/reference.out")"
}

teardown() {
  stop_morphd
  [ ! -f "$WORK/morph.conf.orig" ] || mv "$WORK/morph.conf.orig" "$WORK/morph.conf"
  scontrol delete ReservationName=morph-later 2>/dev/null || true
  scontrol update PartitionName=gpu MaxNodes=UNLIMITED 2>/dev/null || true
  # Online refits (test 5 plants one) would steer the next test's morphd.
  [ ! -s "$MORPH_TESTCLUSTER_DIR/morph.db" ] || python3 -c 'import sqlite3, sys
with sqlite3.connect(sys.argv[1]) as db:
    db.execute("DELETE FROM fitted_params WHERE source = ?", ("online",))
    db.execute("DELETE FROM refit_points")' \
    "$MORPH_TESTCLUSTER_DIR/morph.db"
  local jobs i
  jobs=$(squeue -h -o %A)
  [ -z "$jobs" ] || scancel $jobs
  # Slurm keeps a partition that still lists a job.
  if scontrol show partition pair >/dev/null 2>&1; then
    for i in $(seq 50); do
      scontrol delete PartitionName=pair 2>/dev/null && break
      sleep 0.2
    done
  fi
}

teardown_file() { cluster_teardown; }

# wait_crash: the morphd started with MORPHD_CRASH_AFTER killed itself.
wait_crash() {
  local pid i
  pid=$(cat "$WORK/morphd.pid")
  for i in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$WORK/morphd.pid"; return 0; }
    sleep 0.2
  done
  fail "morphd did not crash: $(tail -n 20 "$WORK/morphd.log")"
}

# promise_kept NAME JOB: a guaranteed job's promise is the speed of its request (the plan
# it was given before Morph replanned it: base_iter_ms, else its plan's iter_ms), here
# emulated at EMULATE times the predicted time. The median step under every plan it ran
# must be as fast, within 5% for the emulation's own overhead.
promise_kept() {
  python3 - "$WORK/$1/metrics" "$(job_record "$2")" "${EMULATE:-0.5}" <<'PY' || fail "job $2 ran below its promise"
import statistics, sys
rec = dict(kv.split("=", 1) for kv in sys.argv[2].split()[1:])
promise = float(sys.argv[3]) * float(rec.get("base_iter_ms", rec["iter_ms"])) / 1e3
runs, ok = {}, True
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] != "#":
        runs.setdefault(f[5], []).append(float(f[2]))
for layout, seconds in runs.items():
    median = statistics.median(seconds[2:] or seconds)
    print("promise: layout=%s median_step_s=%.4f promise_s=%.4f" % (layout, median, promise))
    ok &= median <= promise * 1.05
sys.exit(0 if ok and runs else 1)
PY
}

# plant_dp_refit DB: an online refit of bert-336m, as a previous morphd would have stored
# it, whose gradient synchronisation is 20 times slower (k_dp=20): under it a pipeline
# beats data parallelism on 4 GPUs. With it two points of its refit (refit_points), one
# on a node type this cluster does not have, which the next morphd leaves out.
plant_dp_refit() {
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >>"$WORK/morphd.log" 2>&1  # the schema
  python3 - "$1" <<'PY'
import json, sqlite3, sys, time
names = "k_bwd k_sync k_opt k_opt_off k_off k_swap k_const k_dp k_mp k_pcie k_net k_opt_model k_const_off".split()
params = dict(zip(names, [2.0, 1.5, 0.05, 2.0, 2.0, 2.0, 5.0, 20.0, 1.0, 1.0, 1.0, 0.25, 0.0]))
model = {"format": "morph-perf-model/1", "model": "bert-336m", "params": params,
         "forward": {"intercept_ms": 0, "per_sample_ms": 3.0, "reference_speed": 1.0}}
with sqlite3.connect(sys.argv[1]) as db:
    db.execute("INSERT INTO fitted_params (model, params_json, source, fitted_at, rmsle) VALUES (?, ?, 'online', ?, 0.01)",
               ("bert-336m", json.dumps(model), int(time.time())))
    for job, node_type in (("9001", "emu-a100-80g-4"), ("9002", "emu-h100-8")):
        nodes = json.dumps([{"node": "n1", "node_type": node_type, "gpus": 4, "cpus": 16}])
        db.execute("INSERT INTO refit_points (model, app, configuration, job, global_batch, seq_len, plan, allocation, "
                   "iteration_s, recorded_at) VALUES ('bert-336m', 'bert-336m b64', ?, ?, 64, 512, "
                   "'dp=4 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=16', ?, 0.5, ?)",
                   ("planted " + job, job, nodes, time.time()))
PY
}

@test "morphd: grow, shrink for a guaranteed job, grow back; losses continue and promises hold" {
  rm -f "$WORK/morphd.log"
  # At the predicted speed: a guaranteed job's measured promise and Morph's predictions for
  # its other plans must be comparable for Morph to replan it.
  local EMULATE=1
  job be 1500
  job g1 1000
  job g2 150
  local be g1 g2
  be=$(submit be --morph-sla=best-effort --morph-gpus=1-8)
  wait_state "$be" RUNNING 60
  [ "$(job_field "$be" NumNodes)" = 1 ] && grep -q "gpus_per_node=1 " <<<"$(job_record "$be")" ||
    fail "job_submit_morph did not start it on 1 GPU: $(job_record "$be")"
  wait_grep "$WORK/be/metrics" "dp=1,tp=1,pp=1,zero=0$" 60 3  # a checkpoint to reshard
  start_morphd
  # 1. The best-effort job grows to 8 GPUs, its bound (requeue: 4 GPUs per node).
  wait_grep "$WORK/be/metrics" "start layout=.* nodes=2" 120
  # 2. A guaranteed job on 4 GPUs takes the free node.
  g1=$(submit g1 --morph-sla=guaranteed --morph-gpus=4)
  wait_state "$g1" RUNNING 60
  # 3. A second guaranteed job: the best-effort job gives a node back (shrink), the new
  #    job starts there.
  g2=$(submit g2 --morph-sla=guaranteed --morph-gpus=4)
  wait_grep "$WORK/morphd.log" "job $be: shrink updated -> done" 60
  wait_done "$g2" g2
  # 4. It ends: the best-effort job grows back (requeue).
  wait_grep "$WORK/be/metrics" "driver restarts=2" 180
  wait_done "$g1" g1
  wait_done "$be" be

  # No job lost, none left held, each loss as in the uninterrupted run.
  for j in "$be" "$g1" "$g2"; do [ "$(job_field "$j" Priority)" != 0 ] || fail "job $j was left held"; done
  loss_continues be 1500
  loss_continues g1 1000
  loss_continues g2 150
  promise_kept g1 "$g1"
  promise_kept g2 "$g2"
  # Each requeue step once per requeue, no step twice.
  for step in "planned -> signalled" "signalled -> requeued" "requeued -> held" "held -> updated" \
    "updated -> released" "released -> done"; do
    [ "$(grep -c "job $be: requeue $step" "$WORK/morphd.log")" -eq 2 ] || fail "$step: $(cat "$WORK/morphd.log")"
  done
  [ "$(grep -c "reshard from=" "$WORK/be/metrics")" -eq 3 ] || fail "$(grep '^#' "$WORK/be/metrics")"
  # The overhead of each reconfiguration, with its parts (make check-morphd prints them).
  local lines
  lines=$(for n in be g1 g2; do python3 "$MORPH_SRCDIR/tests/cluster/overhead.py" "$WORK/$n/metrics" "$n"; done)
  echo "$lines" >&3
  for path in shrink requeue; do
    # A shrink decided while a step that failed to start was being launched again has
    # no checkpoint, hence no overhead to show (the driver shrinks before the new step).
    [ "$path" != shrink ] || ! grep -A1 "restart reason=failed-start" "$WORK/be/metrics" | grep -q "shrink nodes=" ||
      continue
    grep -q "^reconfigure: path=$path " <<<"$lines" || fail "no $path: $lines" "$(grep '^#' "$WORK/be/metrics")"
  done

  # What morphd kept: decisions with their reasons, every plan, the observed iterations.
  local morph="$MORPH_BUILDDIR/tools/morph/morph" db="$MORPH_TESTCLUSTER_DIR/morph.db"
  run "$morph" explain "$be" --state "$db"
  [ "$status" -eq 0 ] && [[ $output == *"shrink"*"requeue"*"2 nodes x 4 a100-80g"* ]] || fail "$output"
  run "$morph" --json timeline "$be" --state "$db"
  [ "$status" -eq 0 ] || fail "$output"
  jq -e '[.plans[] | [.nodes, .gpus_per_node]] == [[1, 1], [2, 4], [1, 4], [2, 4]]' <<<"$output" >/dev/null ||
    fail "$output"
  # morphd records the jobs' ends at its next round (it polls every 0.5 s here).
  for _ in $(seq 50); do
    run "$morph" --json status --all --state "$db"
    [ "$status" -eq 0 ] || fail "$output"
    [ "$(jq '[.jobs[] | select(.finished != null)] | length' <<<"$output")" -eq 3 ] && break
    sleep 0.2
  done
  for j in "$be" "$g1" "$g2"; do
    jq -e --argjson j "$j" '.jobs[] | select(.job == $j) | .finished != null and .observed_samples_per_s > 0' \
      <<<"$output" >/dev/null || fail "job $j: $output"
  done
}

@test "a job shrunk once is locked without slurmdbd: morphd replans it by a requeue" {
  rm -f "$WORK/morphd.log"
  local db="$MORPH_TESTCLUSTER_DIR/morph.db"
  # Slower than the default parameters predict, as in the in-place test below.
  local EMULATE=1.6
  job be 4000
  EMULATE=1 job g1 300
  EMULATE=1 job g2 4000
  local be g1 g2
  be=$(submit be --morph-sla=best-effort --morph-gpus=1-8)
  wait_state "$be" RUNNING 60
  wait_grep "$WORK/be/metrics" "dp=1,tp=1,pp=1,zero=0$" 60 3
  start_morphd
  # It grows to two nodes (requeue), then gives one back to the second guaranteed job
  # (shrink, a resize: slurmctld refuses the job's updates from then on, "the DB index is
  # being set", until it is requeued).
  wait_grep "$WORK/be/metrics" "start layout=.* nodes=2" 120
  g1=$(submit g1 --morph-sla=guaranteed --morph-gpus=4)
  wait_state "$g1" RUNNING 60
  g2=$(submit g2 --morph-sla=guaranteed --morph-gpus=4)
  wait_grep "$WORK/morphd.log" "job $be: shrink updated -> done" 60
  wait_grep "$WORK/be/metrics" "start layout=.* nodes=1" 60
  # An online refit (k_dp=20, planted as in the in-place test) changes the model's mind
  # about the plan it runs: the new plan on the same GPUs is carried out by a requeue.
  stop_morphd
  plant_dp_refit "$db"
  start_morphd
  wait_grep "$WORK/morphd.log" "job $be: requeue: 1 node x 4 a100-80g GPUs .*-> 1 node x 4 a100-80g GPUs" 120
  wait_grep "$WORK/morphd.log" "job $be: requeue released -> done" 120 2
  ! grep "job $be: .*rolled_back" "$WORK/morphd.log" || fail "a change of job $be was refused: $(cat "$WORK/morphd.log")"
  ! grep -q "job $be: inplace" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
  wait_grep "$WORK/be/metrics" "driver restarts=2" 60
  wait_grep "$WORK/be/metrics" "start layout=.* nodes=1" 60 2
  scancel "$be" "$g2"
  wait_done "$g1" g1
  loss_continues be 0  # the steps it did, through its three changes
  [ "$(grep -c "reshard from=" "$WORK/be/metrics")" -eq 3 ] || fail "$(grep '^#' "$WORK/be/metrics")"
}

@test "morphd killed after each step of a requeue: its successor finishes it, nothing held or lost" {
  rm -f "$WORK/morphd.log"
  job f 600
  local f
  f=$(submit f --morph-sla=best-effort --morph-gpus=1-4)
  wait_state "$f" RUNNING 60
  wait_grep "$WORK/f/metrics" "dp=1,tp=1,pp=1,zero=0$" 60 3
  # Each morphd dies right after journaling one more step of the same reconfiguration
  # (1 GPU -> 4 GPUs: a requeue); the next one resumes from the journal.
  for state in signalled requeued held updated; do
    start_morphd MORPHD_CRASH_AFTER=$state
    wait_crash
    grep -q "job $f: requeue .* -> $state$" "$WORK/morphd.log" || fail "no $state: $(cat "$WORK/morphd.log")"
  done
  # A dry run leaves the half-done requeue to the next morphd.
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >>"$WORK/morphd.log" 2>&1
  grep -q "1 unfinished reconfiguration(s) left as they are (dry run)" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
  ! grep -q "job $f: requeue updated -> " "$WORK/morphd.log" || fail "the dry run went on: $(cat "$WORK/morphd.log")"
  start_morphd
  wait_grep "$WORK/morphd.log" "job $f: requeue released -> done" 60
  [ "$(grep -c "resuming 1 unfinished reconfiguration" "$WORK/morphd.log")" -eq 4 ] || fail "$(cat "$WORK/morphd.log")"
  wait_done "$f" f
  [ "$(job_field "$f" Priority)" != 0 ] || fail "job $f was left held"
  [ "$(job_field "$f" Restarts)" = 1 ] || fail "job $f restarted $(job_field "$f" Restarts) times"
  [ "$(grep -c "job $f: requeue planned -> signalled" "$WORK/morphd.log")" -eq 1 ]
  grep -q "start layout=dp=4.* nodes=1" "$WORK/f/metrics" || fail "$(grep '^#' "$WORK/f/metrics")"
  loss_continues f 600
}

@test "morphd down while the signalled job restarts on its old plan: the reconfiguration rolls back, then runs again" {
  rm -f "$WORK/morphd.log"
  job f 800
  local f
  f=$(submit f --morph-sla=best-effort --morph-gpus=1-4)
  wait_state "$f" RUNNING 60
  wait_grep "$WORK/f/metrics" "dp=1,tp=1,pp=1,zero=0$" 60 3
  start_morphd MORPHD_CRASH_AFTER=signalled
  wait_crash
  # Nobody holds it: Slurm requeues it (exit 75) and starts it again on its old plan.
  wait_grep "$WORK/f/metrics" "driver restarts=1" 120
  wait_state "$f" RUNNING 30
  start_morphd
  wait_grep "$WORK/morphd.log" "job $f: requeue signalled -> rolled_back: it started again on its old plan" 30
  wait_grep "$WORK/morphd.log" "job $f: requeue released -> done" 120
  wait_done "$f" f
  [ "$(job_field "$f" Priority)" != 0 ] || fail "job $f was left held"
  grep -q "start layout=dp=4.* nodes=1" "$WORK/f/metrics" || fail "$(grep '^#' "$WORK/f/metrics")"
  loss_continues f 800
}

@test "the trainer killed in the middle of a save: the job goes on from the previous checkpoint" {
  rm -f "$WORK/morphd.log"
  job k 600 --save-every 40 --save-seconds 5
  local k
  k=$(submit k --morph-sla=best-effort --morph-gpus=1-4)
  wait_state "$k" RUNNING 60
  wait_grep "$WORK/k/metrics" "dp=1,tp=1,pp=1,zero=0$" 120 45  # step_40 is committed
  start_morphd
  # morphd's checkpoint signal starts a save that takes 5 s: kill the trainer in it.
  local i
  for i in $(seq 300); do compgen -G "$WORK/k/ckpt/step_*.partial" >/dev/null && break; sleep 0.1; done
  compgen -G "$WORK/k/ckpt/step_*.partial" >/dev/null || fail "no save in progress: $(ls "$WORK/k/ckpt")"
  local saving
  saving=$(basename "$(compgen -G "$WORK/k/ckpt/step_*.partial")" .partial)
  # The trainer only (its command line starts with it), not morphrun, whose arguments name it too.
  pkill -9 -f -- "^[^ ]*morph-trainer .*--loss-log $WORK/k/loss" || fail "no trainer to kill"
  wait_grep "$WORK/morphd.log" "job $k: requeue released -> done" 120
  wait_done "$k" k
  [ ! -e "$WORK/k/ckpt/$saving" ] || fail "the killed save was committed: $(ls "$WORK/k/ckpt")"
  # It resumed from an earlier step (the steps after it ran twice) and its loss continued.
  grep -q "reshard from=dp=1,tp=1,pp=1,zero=0" "$WORK/k/metrics" || fail "$(grep '^#' "$WORK/k/metrics")"
  local last_saved=$((${saving#step_} / 40 * 40))
  [ "$last_saved" -eq "${saving#step_}" ] && last_saved=$((last_saved - 40))
  [ "$(grep -c "^$((last_saved + 1)) " "$WORK/k/loss")" -eq 2 ] || fail "step $((last_saved + 1)) did not run again"
  loss_continues k 600
}

@test "slurmctld restarted in the middle of a reconfiguration: the job ends on its new plan, once" {
  rm -f "$WORK/morphd.log"
  job s 600
  local s
  s=$(submit s --morph-sla=best-effort --morph-gpus=1-4)
  wait_state "$s" RUNNING 60
  wait_grep "$WORK/s/metrics" "dp=1,tp=1,pp=1,zero=0$" 60 3
  start_morphd
  wait_grep "$WORK/morphd.log" "job $s: requeue planned -> signalled" 60
  "$MORPH_BUILDDIR/tests/cluster/testcluster" restart-slurmctld 5
  wait_grep "$WORK/morphd.log" "job $s: requeue released -> done" 120
  wait_done "$s" s
  [ "$(job_field "$s" Priority)" != 0 ] || fail "job $s was left held"
  [ "$(job_field "$s" Restarts)" = 1 ] || fail "job $s restarted $(job_field "$s" Restarts) times"
  grep -q "start layout=dp=4.* nodes=1" "$WORK/s/metrics" || fail "$(grep '^#' "$WORK/s/metrics")"
  loss_continues s 600
}

@test "an online refit changes the model's mind: morphd replans the job where it runs (in place)" {
  rm -f "$WORK/morphd.log"
  local db="$MORPH_TESTCLUSTER_DIR/morph.db"
  # The job runs 1.6 times slower than the default parameters predicted: a previous morphd
  # refitted bert-336m online and found its gradient synchronisation 20 times slower
  # (k_dp=20), under which a pipeline beats data parallelism on 4 GPUs.
  local EMULATE=1.6
  job r 500
  local r
  r=$(submit r --morph-sla=best-effort --morph-gpus=4)
  wait_state "$r" RUNNING 60
  grep -q " dp=4 tp=1 pp=1 " <<<"$(job_record "$r")" || fail "job_submit_morph's plan changed: $(job_record "$r")"
  wait_grep "$WORK/r/metrics" "dp=4,tp=1,pp=1,zero=" 60 5  # measured, with a checkpoint to reshard
  plant_dp_refit "$db"
  start_morphd
  wait_grep "$WORK/morphd.log" "job $r: inplace: .*-> 1 node x 4 a100-80g GPUs (dp=1 tp=1 pp=4" 60
  # The refit's points came back with it, but the one on a node type this cluster lacks.
  grep -q "online refit: 1 point its jobs measured before" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
  grep -q "refit point of job 9002 .*left out: node type emu-h100-8 is not one of morph.conf" "$WORK/morphd.log" ||
    fail "$(cat "$WORK/morphd.log")"
  wait_grep "$WORK/r/metrics" "start layout=dp=1,tp=1,pp=4" 120
  wait_done "$r" r
  # Where it ran: no requeue, one reshard; the model, now of one mind, left it there.
  [ "$(job_field "$r" Restarts)" = 0 ] || fail "job $r was requeued"
  [ "$(grep -c "reshard from=" "$WORK/r/metrics")" -eq 1 ] || fail "$(grep '^#' "$WORK/r/metrics")"
  [ "$(grep -c "job $r: inplace:" "$WORK/morphd.log")" -eq 1 ] || fail "$(cat "$WORK/morphd.log")"
  loss_continues r 500
  local lines
  lines=$(python3 "$MORPH_SRCDIR/tests/cluster/overhead.py" "$WORK/r/metrics" r)
  echo "$lines" >&3
  grep -q "^reconfigure: path=inplace " <<<"$lines" || fail "no in-place overhead: $lines"
}

@test "fragmented GPUs: a best-effort job moves to another node (requeue) so that a guaranteed job starts on one" {
  rm -f "$WORK/morphd.log"
  local EMULATE=1
  local name
  for name in a b d; do job "$name" 4000; done
  job c 4000
  job g 150
  local a b c d g
  # Slurm fills the nodes in order: a and b share the first, c the second, d the third.
  a=$(submit a --morph-sla=best-effort --morph-gpus=2)
  wait_state "$a" RUNNING 60
  b=$(submit b --morph-sla=best-effort --morph-gpus=2)
  wait_state "$b" RUNNING 60
  c=$(submit c --morph-sla=best-effort --morph-gpus=4)
  wait_state "$c" RUNNING 60
  d=$(submit d --morph-sla=best-effort --morph-gpus=2)
  wait_state "$d" RUNNING 60
  [ "$(job_field "$a" NodeList)" = "$(job_field "$b" NodeList)" ] &&
    [ "$(job_field "$d" NodeList)" != "$(job_field "$a" NodeList)" ] ||
    fail "a, b and d on $(job_field "$a" NodeList), $(job_field "$b" NodeList), $(job_field "$d" NodeList)"
  # b ends: 2 GPUs free on a's node and 2 on d's, none together.
  scancel "$b"
  wait_grep "$WORK/a/metrics" "^[0-9]" 60 3
  wait_grep "$WORK/d/metrics" "^[0-9]" 60 3
  # A guaranteed job of 4 GPUs (one node): Slurm cannot start it.
  g=$(submit g --morph-sla=guaranteed --morph-gpus=4)
  sleep 2
  [ "$(job_field "$g" JobState)" = PENDING ] || fail "job $g is $(job_field "$g" JobState)"
  start_morphd
  # morphd requeues a or d (the smallest first, each on as many GPUs as it had), and the
  # guaranteed job starts on the node it leaves, not spread over two.
  wait_state "$g" RUNNING 120
  [ "$(job_field "$g" NumNodes)" = 1 ] || fail "job $g on $(job_field "$g" NodeList)" "$(cat "$WORK/morphd.log")"
  local moved
  moved=$(grep -o "job \($a\|$d\): requeue planned -> signalled" "$WORK/morphd.log" | head -n 1 | cut -d' ' -f2 | tr -d :)
  [ -n "$moved" ] || fail "neither $a nor $d was requeued: $(cat "$WORK/morphd.log")"
  ! grep -q "job $c: \|job $g: requeue\|job $g: start" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
  wait_done "$g" g
  loss_continues g 150
  promise_kept g "$g"
  # The moved job runs again on 2 GPUs of another node, its loss continuing.
  [ "$moved" = "$a" ] && name=a || name=d
  wait_grep "$WORK/$name/metrics" "driver restarts=1" 120
  wait_grep "$WORK/$name/metrics" "start layout=" 120 2
  wait_state "$moved" RUNNING 60
  grep -q "gpus_per_node=2 " <<<"$(job_record "$moved")" || fail "$(job_record "$moved")"
  scancel "$a" "$c" "$d"
  loss_continues "$name" 0
}

@test "pending jobs that cannot start get no GPUs: a begin time, a dependency, a reservation not begun" {
  rm -f "$WORK/morphd.log"
  job p 100
  local later dep resv free
  later=$(submit p --begin=now+3600)
  dep=$(submit p --dependency=afterok:"$later")
  free=$(sinfo -h -N -p gpu -o %N | head -n 1)
  scontrol create reservation ReservationName=morph-later StartTime=now+30days Duration=10 Nodes="$free" \
    Users=root >/dev/null
  resv=$(submit p --reservation=morph-later)
  # Slurm gives each its reason at its next scheduling pass.
  local i
  for i in $(seq 150); do
    [ "$(job_field "$later" Reason)/$(job_field "$dep" Reason)/$(job_field "$resv" Reason)" = \
      BeginTime/Dependency/Reservation ] && break
    sleep 0.2
  done
  [ "$(job_field "$resv" Reason)" = Reservation ] || fail "reasons: $(squeue -h -o '%i %r')"
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >>"$WORK/morphd.log" 2>&1
  grep -q "skipped job $later: pending on its begin time: no GPUs until it can start" "$WORK/morphd.log" &&
    grep -q "skipped job $dep: pending on a dependency: no GPUs" "$WORK/morphd.log" &&
    grep -q "skipped job $resv: pending on its reservation: no GPUs" "$WORK/morphd.log" ||
    fail "$(cat "$WORK/morphd.log")"
  ! grep -q "job \($later\|$dep\|$resv\): start" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
}

# morphd reads the partitions from slurmctld each round: a pending job whose partition's
# MaxNodes fell below its record since submission (Reason=PartitionNodeLimit) is planned
# within it. Before, morphd planned it on 3 nodes and it waited for ever.
@test "a partition's MaxNodes lowered after submission: morphd plans the pending job within it" {
  rm -f "$WORK/morphd.log"
  job p 100
  local id
  id=$(submit p -H)
  grow_to_two_nodes "$id"
  scontrol update PartitionName=gpu MaxNodes=1
  scontrol release "$id"
  local i
  for i in $(seq 150); do
    [ "$(job_field "$id" Reason)" = PartitionNodeLimit ] && break
    sleep 0.2
  done
  [ "$(job_field "$id" Reason)" = PartitionNodeLimit ] || fail "reason: $(job_field "$id" Reason)"
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >>"$WORK/morphd.log" 2>&1
  grep -q "job $id: start: 2 nodes x .* -> 1 node x " "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
}

@test "a partition left with one of the three A100 nodes: morphd plans the pending job on one" {
  rm -f "$WORK/morphd.log"
  local id nodes
  nodes=$(sinfo -h -N -p gpu -o %N | sort -u | head -n 2 | paste -sd, -)
  scontrol create PartitionName=pair Nodes="$nodes" State=UP
  job p 100
  id=$(submit p -H -p pair)
  grow_to_two_nodes "$id"
  # The partition loses a node after the job was sized on it; it sets no MaxNodes. Before,
  # morphd counted every A100 node and kept the job on two, where Slurm never starts it.
  scontrol update PartitionName=pair Nodes="${nodes%%,*}"
  scontrol release "$id"
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >>"$WORK/morphd.log" 2>&1
  grep -q "job $id: start: 2 nodes x .* -> 1 node x " "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
}

@test "SIGHUP: morphd reads morph.conf again, runs on as before when it is broken, and names what needs a restart" {
  rm -f "$WORK/morphd.log"
  cp "$WORK/morph.conf" "$WORK/morph.conf.orig"
  start_morphd
  wait_grep "$WORK/morphd.log" "started: .* round every 5 s" 20
  local pid
  pid=$(cat "$WORK/morphd.pid")
  sed -i 's/^SchedulingIntervalSeconds=5$/SchedulingIntervalSeconds=7/' "$WORK/morph.conf"
  kill -HUP "$pid"
  wait_grep "$WORK/morphd.log" "SIGHUP: reloaded $WORK/morph.conf: 3 nodes, .* round every 7 s" 20
  echo "NodeName=broken" >>"$WORK/morph.conf"
  kill -HUP "$pid"
  wait_grep "$WORK/morphd.log" "SIGHUP: not reloaded, running on as before: .*broken" 20
  local port
  port=$(sed -n 's/^MorphdAddress=127.0.0.1://p' "$WORK/morph.conf")
  sed -i -e '$d' -e "s/^MorphdAddress=.*/MorphdAddress=127.0.0.1:$((port + 1))/" "$WORK/morph.conf"
  kill -HUP "$pid"
  wait_grep "$WORK/morphd.log" "SIGHUP: MorphdAddress changed in $WORK/morph.conf; it takes effect when morphd restarts" 20
  wait_grep "$WORK/morphd.log" "SIGHUP: reloaded" 20 2
  kill -0 "$pid" || fail "morphd died: $(tail -n 20 "$WORK/morphd.log")"
  [ "$(grep -c "receiving iteration reports on" "$WORK/morphd.log")" -eq 1 ]  # on the first address still
}

@test "morphd refuses to start where slurm.conf's RequeueExit does not list 75: each move would end its job" {
  rm -f "$WORK/morphd.log"
  cp "$SLURM_CONF" "$WORK/slurm.conf.orig"
  sed -i 's/^RequeueExit=.*/RequeueExit=1-9/' "$SLURM_CONF"
  scontrol reconfigure
  run "$MORPH_BUILDDIR/daemon/morphd" -D --once
  local refused=$status out=$output
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >>"$WORK/morphd.log" 2>&1
  local dry=$?
  mv "$WORK/slurm.conf.orig" "$SLURM_CONF"
  scontrol reconfigure
  [ "$refused" -ne 0 ] || fail "morphd started: $out"
  [[ "$out" == *"slurm.conf's RequeueExit=1-9 does not list 75"*"add 75 to RequeueExit"* ]] || fail "message" "$out"
  [[ "$out" != *"started: policy"* ]] || fail "it started before refusing" "$out"
  # A dry run moves nothing: it says so and goes on.
  [ "$dry" -eq 0 ] || fail "the dry run failed: $(cat "$WORK/morphd.log")"
  grep -q "does not list 75.*(dry run: going on)" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
  # With 75 listed again it starts.
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >"$WORK/morphd.log" 2>&1 || fail "$(cat "$WORK/morphd.log")"
  ! grep -q "RequeueExit" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
}

@test "a Morph job whose batch script does not run morphrun --driver is never signalled: morphd leaves it where it runs" {
  rm -f "$WORK/morphd.log"
  # A best-effort job that morphd would grow onto free GPUs (a requeue, test 5), had its
  # batch shell a driver to catch the checkpoint signal: an untrapped bash dies of it.
  mkdir -p "$WORK/plain"
  printf '#!/bin/bash\nsleep 600\n' >"$WORK/plain/job.sh"
  chmod 755 "$WORK/plain/job.sh"
  local p
  p=$(submit plain --morph-sla=best-effort --morph-gpus=1-4)
  wait_state "$p" RUNNING 60
  start_morphd
  wait_grep "$WORK/morphd.log" "job $p: shows no step of morphrun --driver (yet): left where it runs" 30 3
  stop_morphd
  ! grep -q "job $p: requeue\|job $p: preempt" "$WORK/morphd.log" || fail "$(cat "$WORK/morphd.log")"
  [ "$(job_field "$p" JobState)" = RUNNING ] || fail "job $p is $(job_field "$p" JobState)"
  [ "$(job_field "$p" Restarts)" = 0 ]
  scancel "$p"
}

@test "PurgeJobsAfterDays: morphd drops what it recorded of jobs that ended longer ago, and keeps the others" {
  rm -f "$WORK/morphd.log"
  cp "$WORK/morph.conf" "$WORK/morph.conf.orig"
  "$MORPH_BUILDDIR/daemon/morphd" -D --once --dry-run >>"$WORK/morphd.log" 2>&1  # the schema
  # Two jobs Slurm no longer lists, as an earlier morphd recorded them: one ended two days
  # ago, one an hour ago.
  python3 - "$MORPH_TESTCLUSTER_DIR/morph.db" <<'PY'
import sqlite3, sys, time
now = int(time.time())
with sqlite3.connect(sys.argv[1]) as db:
    for job, ended in ((900001, now - 2 * 86400), (900002, now - 3600)):
        db.execute("INSERT INTO jobs VALUES (?, 'bert-336m', 64, 'best-effort', 0, ?, ?)", (job, ended - 600, ended))
        db.execute("INSERT INTO job_plans (job_id, from_time, record, gpu_type, nodes, gpus_per_node, "
                   "predicted_samples_per_s) VALUES (?, ?, 'morph:v1', 'a100-80g', 1, 4, 10)", (job, ended - 500))
        db.execute("INSERT INTO decisions (time, job_id, action, reason, alternatives_json) "
                   "VALUES (?, ?, 'start', 'free GPUs', '[]')", (ended - 500, job))
PY
  echo "PurgeJobsAfterDays=1" >>"$WORK/morph.conf"
  "$MORPH_BUILDDIR/daemon/morphd" -D --once >>"$WORK/morphd.log" 2>&1 || fail "$(cat "$WORK/morphd.log")"
  grep -q "purged what is recorded of 1 job that ended over 1 day ago (PurgeJobsAfterDays)" "$WORK/morphd.log" ||
    fail "$(cat "$WORK/morphd.log")"
  local left
  left=$(python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(" ".join("%s:%d" % (t, db.execute("SELECT COUNT(*) FROM %s WHERE job_id >= 900001" % t).fetchone()[0])
               for t in ("jobs", "job_plans", "decisions")))' "$MORPH_TESTCLUSTER_DIR/morph.db")
  [ "$left" = "jobs:1 job_plans:1 decisions:1" ] || fail "left: $left"
  # Without the setting nothing goes.
  mv "$WORK/morph.conf.orig" "$WORK/morph.conf"
  "$MORPH_BUILDDIR/daemon/morphd" -D --once >>"$WORK/morphd.log" 2>&1 || fail "$(cat "$WORK/morphd.log")"
  [ "$(grep -c "purged" "$WORK/morphd.log")" -eq 1 ] || fail "$(cat "$WORK/morphd.log")"
}
