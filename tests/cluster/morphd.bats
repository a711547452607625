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
  # The trainer's shape allows every plan of bert-336m (24 layers, 16 heads) that fits 8 GPUs.
  TRAINER_ARGS="--layers 24 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --global-batch 64 --micro-batches 1"
  export TRAINER_ARGS
}

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
  export OMPI_MCA_btl=self,tcp
}

teardown() {
  pkill -f "daemon/morphd -D" 2>/dev/null || true
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
  "$MORPH_BUILDDIR/daemon/morphd" -D --poll 0.5 >"$WORK/morphd.log" 2>&1 &
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
}
