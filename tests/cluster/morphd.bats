#!/usr/bin/env bats
# morphd on the local Slurm cluster (tests/cluster/testcluster): it starts pending Morph
# jobs where the policy puts them and grows a running one through the requeue path
# (checkpoint signal, requeue, hold, new record, release); morphrun --driver reshards the
# checkpoint and the loss continues as in an uninterrupted run.
#
# Its own cluster (port 18870, /tmp/morph-testcluster-morphd, 2 nodes of 4 a100). Needs
# root, Slurm, munge and Open MPI; otherwise every test is skipped with the reason.

bats_require_minimum_version 1.5.0
load cluster

setup_file() {
  CLUSTER_NODES=2x4xa100-80g cluster_setup 18870 /tmp/morph-testcluster-morphd daemon/morphd launcher/morphrun \
    tests/trainer/morph-trainer
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  export WORK="$MORPH_TESTCLUSTER_DIR/work" MORPH_FRAMEWORKS="$MORPH_SRCDIR/share/frameworks"
  rm -rf "$WORK"
  install -d -m 1777 "$WORK"
  # morphd takes morphrun's iteration reports here (the jobs inherit MORPH_CONF).
  { cat "$MORPH_CONF"; echo "MorphdAddress=127.0.0.1:18930"; } >"$WORK/morph.conf"
  export MORPH_CONF="$WORK/morph.conf"
  # The trainer's shape allows every plan of bert-336m (24 layers, 16 heads) that fits 8 GPUs.
  TRAINER_ARGS="--layers 24 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --global-batch 64 --micro-batches 1"
  export TRAINER_ARGS
}

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
  # Ranks that wait yield the CPU: emulated nodes share a few cores with their slurmd.
  export OMPI_MCA_btl=self,tcp OMPI_MCA_mpi_yield_when_idle=1
}

teardown() {
  [ ! -s "$WORK/morphd.pid" ] || kill "$(cat "$WORK/morphd.pid")" 2>/dev/null || true
}

teardown_file() { cluster_teardown; }

field() { scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s|^$2=||p" | head -n 1; }
wait_state() {  # JOB STATE SECONDS
  local i
  for i in $(seq $(($3 * 5))); do
    [ "$(field "$1" JobState)" = "$2" ] && return 0
    sleep 0.2
  done
  echo "job $1 is $(field "$1" JobState) after $3 s, expected $2" >&2
  return 1
}

@test "morphd grows a running job through the requeue path and its loss continues" {
  local steps=40
  # The uninterrupted run.
  timeout 120 srun -N1 -n1 -p gpu --mpi=pmix "$MORPH_BUILDDIR/tests/trainer/morph-trainer" --layout dp=1 $TRAINER_ARGS \
    --steps $steps --quiet --loss-log "$WORK/reference.loss" || fail "the reference run failed"
  cat >"$WORK/job.sh" <<EOS
#!/bin/bash
exec "$MORPH_BUILDDIR/launcher/morphrun" --driver --framework torch --mpi-trainer --checkpoint "$WORK/ckpt" \\
  --metrics "$WORK/metrics" -- "$MORPH_BUILDDIR/tests/trainer/morph-trainer" $TRAINER_ARGS --steps $steps \\
  --loss-log "$WORK/loss" --quiet --emulate-speed 0.5
EOS
  local job
  job=$(sbatch --parsable --requeue --open-mode=append -D "$WORK" -o "$WORK/%j.out" --morph-model=bert-336m \
    --morph-batch=64 --morph-sla=best-effort "$WORK/job.sh")
  wait_state "$job" RUNNING 60
  grep -q "gpus_per_node=1 " <<<"$(scontrol show job "$job")" || fail "job_submit_morph did not start it on 1 GPU"
  # A few iterations on 1 GPU first, so that there is a checkpoint to reshard.
  for _ in $(seq 300); do
    [ "$(grep -v '^#' "$WORK/metrics" 2>/dev/null | wc -l)" -ge 3 ] && break
    sleep 0.2
  done
  "$MORPH_BUILDDIR/daemon/morphd" -D --poll 0.5 >"$WORK/morphd.log" 2>&1 &
  echo $! >"$WORK/morphd.pid"
  wait_state "$job" COMPLETED 300 || fail "$(cat "$WORK/morphd.log" "$WORK/$job.out")"
  # The requeue path, each step once, and the job ran on both nodes in the end.
  for step in "planned -> signalled" "signalled -> requeued" "requeued -> held" "held -> updated" \
    "updated -> released" "released -> done"; do
    [ "$(grep -c "job $job: requeue $step" "$WORK/morphd.log")" -eq 1 ] || fail "$step: $(cat "$WORK/morphd.log")"
  done
  [ "$(field "$job" Restarts)" -ge 1 ]
  [ "$(field "$job" NumNodes)" = 2 ] || fail "$(scontrol show job "$job")"
  grep -q "^# .* reshard from=dp=1,tp=1,pp=1,zero=0" "$WORK/metrics" || fail "no reshard: $(cat "$WORK/metrics")"
  python3 - "$WORK/reference.loss" "$WORK/loss" <<'PY' || fail "the loss did not continue"
import sys
ref = dict(line.split() for line in open(sys.argv[1]))
got = dict(line.split() for line in open(sys.argv[2]))
assert set(ref) == set(got), (len(ref), len(got))
worst = max(abs(float(got[s]) - float(ref[s])) / abs(float(ref[s])) for s in ref)
print("max_rel_loss_diff=%.3g" % worst)
sys.exit(0 if worst <= 1e-5 else 1)
PY
  [ "$(field "$job" Priority)" != 0 ]  # never left held
  # What morphd kept: the decision and its reason, the new plan, the observed iterations.
  local morph="$MORPH_BUILDDIR/tools/morph/morph" db="$MORPH_TESTCLUSTER_DIR/morph.db"
  run "$morph" explain "$job" --state "$db"
  [ "$status" -eq 0 ] && [[ $output == *"requeue"*"2 nodes x 4 a100-80g"* ]] || fail "$output"
  run "$morph" --json timeline "$job" --state "$db"
  [ "$status" -eq 0 ] || fail "$output"
  jq -e '.plans | length == 1 and .[0].nodes == 2 and .[0].gpus_per_node == 4' <<<"$output" >/dev/null || fail "$output"
  # morphd records the job's end at its next round (it polls every 0.5 s here).
  for _ in $(seq 50); do
    run "$morph" --json status --all --state "$db"
    [ "$status" -eq 0 ] || fail "$output"
    jq -e --argjson j "$job" '.jobs[] | select(.job == $j) | .finished != null' <<<"$output" >/dev/null && break
    sleep 0.2
  done
  jq -e --argjson j "$job" '.jobs[] | select(.job == $j) | .finished != null and .observed_samples_per_s > 0' \
    <<<"$output" >/dev/null || fail "$output"
}
