#!/usr/bin/env bash
# check_launcher.sh (make check-launcher): the reference trainer under morphrun --driver
# on the local Slurm cluster changes its plan three ways, and after each the loss goes on
# as in an uninterrupted run:
#
#   in-place   the job's record gets another plan on the same GPUs (as morphd writes it):
#              the driver checkpoints the step, reshards over MPI, starts a new step
#   shrink     the new plan needs one of the job's two nodes: the driver gives the other
#              back (scontrol update NumNodes), reshards, starts a new step
#   requeue    the checkpoint signal (scancel -s USR2 -b): the step saves, the job exits
#              with 75 and Slurm requeues it; an admin rewrites the plan while it is held;
#              released, it restarts and morphrun reshards over MPI
#
# Each trainer starts a helper that does not handle the checkpoint signal, as a
# data-loader worker; it notes the signal if one reaches it. One line per change:
#   relaunch: from=<plan> to=<plan> requeued=<0|1> seconds=<signal to first new iteration> max_rel_loss_diff=<x> helpers_signalled=<n> orphans=<n>
# and exit status 1 when a loss differs by more than TOLERANCE (default 1e-5), the
# checkpoint signal reached a helper, a process outlived its job, or a job did not finish. Needs a running test cluster
# (SLURM_CONF; without it, one of its own: tests/cluster/testcluster) and MORPH_BUILDDIR.
# KEEP_WORK=1 keeps the work folder.
set -euo pipefail

die() { echo "check-launcher: $*" >&2; exit 1; }
B=${MORPH_BUILDDIR:?set MORPH_BUILDDIR to the build folder}
S=${MORPH_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
work=
cleanup() {
  [[ -z $work || ${KEEP_WORK:-0} == 1 ]] || rm -rf "$work"
  [[ ${own_cluster:-0} == 0 ]] || "$B/tests/cluster/testcluster" down >/dev/null 2>&1
}
trap cleanup EXIT
# Without SLURM_CONF, a cluster of its own for the run (root).
if [[ -z ${SLURM_CONF:-} ]]; then
  export MORPH_TESTCLUSTER_PORT=${MORPH_TESTCLUSTER_PORT:-18570}
  export MORPH_TESTCLUSTER_DIR=${MORPH_TESTCLUSTER_DIR:-/tmp/morph-testcluster-check-launcher}
  up=$("$B/tests/cluster/testcluster" up) || die "cannot start a test cluster: $up"
  export SLURM_CONF=${up##*SLURM_CONF=} MORPH_CONF=$MORPH_TESTCLUSTER_DIR/morph.conf
  own_cluster=1
fi
TRAINER=$B/tests/trainer/morph-trainer
MORPHRUN=$B/launcher/morphrun
[[ -x $TRAINER && -x $MORPHRUN ]] || die "build morph-trainer and morphrun first (make check builds them)"
tolerance=${TOLERANCE:-1e-5}
steps=${STEPS:-30}
export OMPI_MCA_btl=self,tcp  # the emulated nodes share one host
export MORPH_FRAMEWORKS=${MORPH_FRAMEWORKS:-$S/share/frameworks}  # the source tree's, when not installed

work=$(mktemp -d /tmp/morph-launcher.XXXXXX)
chmod 755 "$work"
[[ ${KEEP_WORK:-0} == 1 ]] && echo "check-launcher: work folder $work" >&2

model=(--layers 4 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 4096 --global-batch 32 --micro-batches 2
       --lr 1e-2 --seed 1 --steps "$steps" --quiet)

# shellcheck source=tests/cluster/job_control.bash
source "$S/tests/cluster/job_control.bash"

# The uninterrupted run every case is compared with.
srun --mpi=pmix -N1 -n 8 -p gpu "$TRAINER" --layout dp=2,tp=2,pp=2,zero=1 "${model[@]}" --loss-log "$work/reference.loss" \
  >"$work/reference.out" 2>&1 || { cat "$work/reference.out" >&2; die "the reference run failed"; }

max_rel_diff() {
  python3 - "$work/reference.loss" "$1" <<'PY'
import sys
ref = {int(s): float(l) for s, l in (line.split() for line in open(sys.argv[1]))}
got = {}
for line in open(sys.argv[2]):
    s, l = line.split()
    got[int(s)] = float(l)  # a step run again after a restart: the last one counts
missing = sorted(set(ref) - set(got))
if missing:
    print("missing-steps:%d" % len(missing)); sys.exit()
print("%.3g" % max(abs(got[s] - ref[s]) / max(abs(ref[s]), 1e-300) for s in ref))
PY
}

# Seconds from the checkpoint event to the first iteration after the next start.
relaunch_seconds() {
  python3 - "$1" <<'PY'
import sys
asked = start = None
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == '#':
        if f[2] == 'checkpoint' and asked is None: asked = float(f[1])
        elif f[2] == 'start' and asked is not None: start = True
    elif start:
        print("%.1f" % (float(f[0]) - asked)); sys.exit()
print("nan")
PY
}

# helper.sh LOG COMMAND...: COMMAND, with a helper beside it that notes in LOG each
# checkpoint signal that reaches it, and ends with COMMAND's process.
cat >"$work/helper.sh" <<'EOS'
#!/bin/bash
log=$1
shift
(
  trap 'echo USR2 >>"$log"' USR2
  while kill -0 $$ 2>/dev/null; do sleep 0.2; done
) </dev/null >/dev/null 2>&1 &
exec "$@"
EOS
chmod 755 "$work/helper.sh"

status=0
# submit NAME NODES GPU_TYPE GPUS_PER_NODE PLAN...: a held Morph job whose record an admin sets.
submit() {
  local name=$1 nodes=$2 type=$3 gpn=$4
  shift 4
  mkdir -p "$work/$name"
  cat >"$work/$name/job.sh" <<EOS
#!/bin/bash
exec "$MORPHRUN" --driver --framework torch --mpi-trainer --checkpoint "$work/$name/ckpt" --metrics "$work/$name/metrics" -- \\
  "$work/helper.sh" "$work/$name/helper-signals" "$TRAINER" ${model[*]} --loss-log "$work/$name/loss" --min-step-seconds 0.25
EOS
  job=$(sbatch --parsable --hold --requeue --open-mode=append -D "$work" -o "$work/%j.out" --morph-model=llama2-7b --morph-batch=32 \
    "$work/$name/job.sh")
  local r
  r=$(with_plan "$(job_record "$job")" type="$type" nodes="$nodes" gpus_per_node="$gpn" cpus_per_gpu=1 "$@")
  scontrol update job="$job" AdminComment="$r" || die "$name: the admin could not set the plan: $r"
  scontrol release "$job"
}

report() {  # NAME JOB FROM TO
  local name=$1 job=$2 diff seconds orphans requeued signalled
  wait_state "$job" COMPLETED 240 || status=1
  diff=$(max_rel_diff "$work/$name/loss")
  seconds=$(relaunch_seconds "$work/$name/metrics")
  # pgrep exits 1 when no process matches; any other failure (127: no pgrep) is not "none".
  orphans=$(pgrep -f -- "$work/$name/") || [ $? -eq 1 ] || { echo "check-launcher: pgrep failed" >&2; exit 1; }
  orphans=$(grep -c . <<<"$orphans" || true)
  requeued=$(( $(job_field "$job" Restarts) > 0 ? 1 : 0 ))
  signalled=0
  if [[ -f $work/$name/helper-signals ]]; then signalled=$(wc -l <"$work/$name/helper-signals"); fi
  echo "relaunch: from=$3 to=$4 requeued=$requeued seconds=$seconds max_rel_loss_diff=$diff" \
    "helpers_signalled=$signalled orphans=$orphans"
  python3 -c "import sys; sys.exit(0 if '$diff'[0].isdigit() and float('$diff') <= $tolerance else 1)" || status=1
  [[ $signalled == 0 && $orphans == 0 ]] || status=1
}

common=(offload=0 gc=0 ga=1 mb=1 mbs=16)  # batch 32 = dp 2 x 16; the trainer keeps its own batch

# 1. In place: a new plan on the same 8 GPUs of one node.
submit in-place 1 a100-80g 8 dp=2 tp=2 pp=2 zero=1 "${common[@]}"
wait_step "$work/in-place/metrics" 5 120 "$job"
from=$(plan_of "$(job_record "$job")")
scontrol update job="$job" AdminComment="$(with_plan "$(job_record "$job")" dp=4 tp=2 pp=1 zero=1 mbs=8)"
report in-place "$job" "$from" "$(plan_of "$(job_record "$job")")"

# 2. Shrink: two nodes, 4 GPUs of each, to one.
submit shrink 2 a100-80g 4 dp=2 tp=2 pp=2 zero=1 "${common[@]}"
wait_step "$work/shrink/metrics" 5 120 "$job"
from=$(plan_of "$(job_record "$job")")
scontrol update job="$job" AdminComment="$(with_plan "$(job_record "$job")" nodes=1 dp=1 tp=2 pp=2 mbs=32)"
report shrink "$job" "$from" "$(plan_of "$(job_record "$job")")"

# 3. Requeue: the checkpoint signal, Slurm requeues, the admin changes the plan meanwhile.
submit requeue 1 a100-80g 8 dp=2 tp=2 pp=2 zero=1 "${common[@]}"
wait_step "$work/requeue/metrics" 5 120 "$job"
from=$(plan_of "$(job_record "$job")")
scancel -s USR2 -b "$job"
wait_state "$job" PENDING 60
scontrol hold "$job"
scontrol update job="$job" AdminComment="$(with_plan "$(job_record "$job")" dp=2 tp=4 pp=1)"
scontrol release "$job"
report requeue "$job" "$from" "$(plan_of "$(job_record "$job")")"
exit $status
