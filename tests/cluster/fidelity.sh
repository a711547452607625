#!/usr/bin/env bash
# fidelity.sh (make check-morphd): the simulator against the real thing. A mini trace of
# JOBS jobs (default 20; bert-336m, batch 256, 1 to 4 GPUs requested, about a third
# guaranteed, one arrival every few seconds) runs for real on the local Slurm cluster
# under morphd, each job the reference trainer under `morphrun --driver` at emulated
# speed (every step lasts the iteration time Morph predicts for its plan on the emulated
# GPUs), and through `morph simulate` on the same trace, cluster, model and restart
# costs (per path, as measured on this cluster: docs/morphd.md). Prints
#
#   fidelity: real_avg_jct_s=<r> sim_avg_jct_s=<s> ratio=<s/r> real_makespan_s=<m> sim_makespan_s=<n> makespan_ratio=<n/m>
#
# and each real reconfiguration's overhead (overhead.py). Exit status 1 when a job did not
# finish. Needs root, Slurm, munge and Open MPI, and MORPH_SRCDIR/MORPH_BUILDDIR; uses a
# cluster of its own (port 18970, /tmp/morph-testcluster-fidelity). KEEP_WORK=1 keeps it up.
set -euo pipefail
die() { echo "fidelity: $*" >&2; exit 1; }
S=${MORPH_SRCDIR:?set MORPH_SRCDIR}
B=${MORPH_BUILDDIR:?set MORPH_BUILDDIR}
jobs=${JOBS:-20}
penalty=${RESTART_PENALTY:-20}  # the payback guard
# What each path costs on this cluster (docs/morphd.md, "Overhead per path"): a start
# (Slurm schedules a pending job as soon as morphd updates it), a new plan in place, a
# shrink, a requeue (cred_expire=10 s and the restart).
costs=${RESTART_COSTS:-start=2,inplace=2,shrink=2,requeue=13}
export MORPH_TESTCLUSTER_PORT=18970 MORPH_TESTCLUSTER_DIR=/tmp/morph-testcluster-fidelity
cleanup() {
  [[ -z ${morphd_pid:-} ]] || kill "$morphd_pid" 2>/dev/null || true
  [[ ${KEEP_WORK:-0} == 1 ]] || "$B/tests/cluster/testcluster" down >/dev/null 2>&1 || true
}
trap cleanup EXIT
"$B/tests/cluster/testcluster" down >/dev/null 2>&1 || true
up=$("$B/tests/cluster/testcluster" up --nodes 3x4xa100-80g) || die "cannot start the cluster: $up"
export SLURM_CONF=${up##*SLURM_CONF=}
work=$MORPH_TESTCLUSTER_DIR/work
install -d -m 1777 "$work"
# Rounds every second, as the simulator's; the same restart costs on both sides.
{ cat "$MORPH_TESTCLUSTER_DIR/morph.conf"; echo "MorphdAddress=127.0.0.1:19030"
  echo "RestartPenaltySeconds=$penalty"; echo "SchedulingIntervalSeconds=1"
  for c in ${costs//,/ }; do
    case ${c%%=*} in start) echo "StartPenaltySeconds=${c#*=}" ;; inplace) echo "InPlacePenaltySeconds=${c#*=}" ;;
      shrink) echo "ShrinkPenaltySeconds=${c#*=}" ;; requeue) echo "RequeuePenaltySeconds=${c#*=}" ;;
      *) die "RESTART_COSTS: ${c%%=*} is not start, inplace, shrink or requeue" ;; esac
  done
  echo "RefitErrorThreshold=0"; } >"$work/morph.conf"  # the emulated speed is the model's: nothing to refit
export MORPH_CONF=$work/morph.conf MORPH_FRAMEWORKS=$S/share/frameworks OMPI_MCA_btl=self,tcp OMPI_MCA_mpi_yield_when_idle=1

# The trace, in the Morphling artifact's format ("bert" is bert-336m, here at batch 256).
python3 - "$jobs" >"$work/trace.csv" <<'PY'
import random, sys
rng = random.Random(7)
print("name,submission_time,duration,application,num_gpus,num_cpus,bandwidth,exec_plan,steps,is_sla")
t = 0.0
for i in range(int(sys.argv[1])):
    gpus = rng.choice([1, 2, 2, 4, 4])
    steps = rng.randrange(12, 40)
    sla = 1 if rng.random() < 0.35 else 0
    # duration: the run time on the requested GPUs, as the model roughly predicts it
    print(f"j{i},{t:.1f},{steps * 2.4 / gpus:.1f},bert,{gpus},{4 * gpus},0,11{gpus},{steps},{sla}")
    t += rng.uniform(3, 10)
PY

model=(--layers 24 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --global-batch 256 --micro-batches 1)
"$B/daemon/morphd" -D --poll 0.5 >"$work/morphd.log" 2>&1 &
morphd_pid=$!
start=$(date +%s.%N)
while IFS=, read -r name submit _ _ gpus _ _ _ steps sla; do
  [[ $name == name ]] && continue
  mkdir -p "$work/$name"
  chmod 777 "$work/$name"
  cat >"$work/$name/job.sh" <<EOS
#!/bin/bash
exec "$B/launcher/morphrun" --driver --framework torch --mpi-trainer --checkpoint "$work/$name/ckpt" \\
  --metrics "$work/$name/metrics" -- "$B/tests/trainer/morph-trainer" ${model[*]} --steps $steps --quiet \\
  --emulate-speed 1
EOS
  chmod 755 "$work/$name/job.sh"
  sleep "$(python3 -c "import time; print(max(0.0, $start + $submit - time.time()))")"
  date +%s.%N >"$work/$name/submit"
  sla_name=$([[ $sla == 1 ]] && echo guaranteed || echo best-effort)
  sbatch --parsable --requeue --open-mode=append -D "$work" -o "$work/$name.out" -J "$name" --morph-model=bert-336m \
    --morph-batch=256 --gres="gpu:$gpus" --morph-plan="dp=$gpus,tp=1,pp=1" --morph-iterations="$steps" \
    --morph-sla="$sla_name" "$work/$name/job.sh" >"$work/$name/id" 2>"$work/$name/sbatch.err" ||
    die "$name: sbatch failed: $(cat "$work/$name/sbatch.err")"
done <"$work/trace.csv"

for _ in $(seq 1800); do
  [[ -z $(squeue -h -o %A) ]] && break
  sleep 0.5
done
[[ -z $(squeue -h -o %A) ]] || die "jobs still queued after 15 minutes: $(squeue)"

# A job's end: the driver's `finished` event (the batch script is morphrun itself, so that
# the checkpoint signal reaches it).
for dir in "$work"/j*/; do
  sed -n 's/^# \([0-9.]*\) finished$/\1/p' "$dir/metrics" >"$dir/end"
  [[ -s $dir/end ]] || die "$(basename "$dir") did not finish: $(tail -n 5 "$work/$(basename "$dir").out")"
  python3 "$S/tests/cluster/overhead.py" "$dir/metrics" "$(basename "$dir")"
done

# The simulator on the same trace, cluster, model and restart costs (its description of
# the artifact's applications names the artifact's node type, hgx-a800).
{ cat "$work/morph.conf"; grep -E "^(GpuType=a800|NodeType=hgx-a800) " "$S/etc/morph.conf"; } >"$work/sim.conf"
# The artifact's "bert" application runs batch 32; these jobs run 256.
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for w in d["workloads"]:
    if w["name"] == "bert": w["global_batch"] = 256
json.dump(d, open(sys.argv[2], "w"))' "$S/share/morphling-artifact.json" "$work/artifact.json"
MORPH_CONF=$work/sim.conf MORPH_ARTIFACT_SPEC=$work/artifact.json MORPH_CATALOG=$S/share/models.json \
  "$B/tools/morph/morph" simulate --workload "$work/trace.csv" --cluster 3x4xa100-80g --policy morphling \
  --interval 1 --payback "$penalty" --job-length exact --jobs-csv "$work/sim.csv" >"$work/sim.out" ||
  die "morph simulate failed: $(cat "$work/sim.out")"

python3 - "$work" <<'PY'
import csv, glob, os, sys
work = sys.argv[1]
real = {}
for d in glob.glob(os.path.join(work, "j*/")):
    d = d.rstrip("/")
    real[os.path.basename(d)] = (float(open(d + "/submit").read()), float(open(d + "/end").read()))
t0 = min(s for s, _ in real.values())
sim = {r["name"]: r for r in csv.DictReader(open(os.path.join(work, "sim.csv")))}
assert set(sim) == set(real), (sorted(set(real) ^ set(sim)))
real_jct = sum(e - s for s, e in real.values()) / len(real)
sim_jct = sum(float(r["jct_s"]) for r in sim.values()) / len(sim)
real_span = max(e for _, e in real.values()) - t0
sim_span = max(float(r["end_s"]) for r in sim.values()) - min(float(r["submit_s"]) for r in sim.values())
print(f"fidelity: real_avg_jct_s={real_jct:.1f} sim_avg_jct_s={sim_jct:.1f} ratio={sim_jct / real_jct:.3f} "
      f"real_makespan_s={real_span:.1f} sim_makespan_s={sim_span:.1f} makespan_ratio={sim_span / real_span:.3f}")
PY
grep -E "^(policy|all|guaranteed|best-effort|makespan)" "$work/sim.out" | sed 's/^/fidelity: sim: /'
echo "fidelity: morphd: $(grep -c ': start: ' "$work/morphd.log") starts, $(grep -cE ': (inplace|shrink|requeue|preempt): ' "$work/morphd.log") reconfigurations"
