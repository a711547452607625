#!/usr/bin/env bash
# The load a Morph job start puts on slurmctld: one job on 2 nodes whose batch script
# runs STEPS srun steps of one task per node (2 x STEPS step starts), on a local cluster;
# slurmctld's RPC counts (sdiag) before and after it. Polling uses squeue without -j
# (REQUEST_JOB_INFO), so REQUEST_JOB_INFO_SINGLE counts only what the job's steps ask.
#   MORPH_TESTCLUSTER: another testcluster script (e.g. one running older plugins)
# Last line: plan_reads: step_starts=<n> job_info_single=<reads> rpcs=<all RPCs> seconds=<s>
set -euo pipefail
BUILDDIR=${MORPH_BUILDDIR:?set by make bench-plan-reads}
STEPS=${MORPH_BENCH_STEPS:-50}
[ "$(id -u)" -eq 0 ] || { echo "bench-plan-reads: needs root (it starts a local Slurm cluster)" >&2; exit 1; }
command -v slurmctld >/dev/null || { echo "bench-plan-reads: Slurm is not installed" >&2; exit 1; }
testcluster=${MORPH_TESTCLUSTER:-$BUILDDIR/tests/cluster/testcluster}
export MORPH_TESTCLUSTER_DIR=/tmp/morph-bench-reads MORPH_TESTCLUSTER_PORT=18570
trap '"$testcluster" down >/dev/null 2>&1 || true' EXIT
"$testcluster" down >/dev/null 2>&1 || true
conf=$("$testcluster" up | tail -n 1)
export SLURM_CONF=${conf#SLURM_CONF=}
jobs=$MORPH_TESTCLUSTER_DIR/jobs
install -d -m 1777 "$jobs"
cat >"$jobs/steps.sh" <<SCRIPT
#!/bin/bash
for i in \$(seq $STEPS); do
  srun --ntasks="\$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 bash -c '[ -n "\$MORPH_PLAN" ]' || exit 1
done
SCRIPT
chmod 755 "$jobs/steps.sh"

# rpc_count [TYPE]: slurmctld's count of TYPE RPCs, or of all of them.
rpc_count() {
  sdiag | awk -v type="${1:-}" '
    /^Remote Procedure Call statistics by message type/ { on = 1; next }
    /^Remote Procedure Call statistics by user/ { on = 0 }
    on && $4 ~ /^count:/ { n = substr($4, 7); if (type == "" || $1 == type) sum += n }
    END { print sum + 0 }'
}

single0=$(rpc_count REQUEST_JOB_INFO_SINGLE) all0=$(rpc_count)
start=$SECONDS
job=$(sbatch --parsable -D "$jobs" -o "$jobs/%j.out" --morph-model=llama-30b --morph-batch=256 --morph-gpus=16 \
  "$jobs/steps.sh" 2>/dev/null | tail -n 1)
for _ in $(seq 1200); do
  state=$(squeue -h -a -t all -o '%i %T' | awk -v j="$job" '$1 == j { print $2 }')
  case $state in COMPLETED) break ;; FAILED | CANCELLED | TIMEOUT | NODE_FAIL)
    echo "bench-plan-reads: job $job ended $state:" >&2; cat "$jobs/$job.out" >&2; exit 1 ;;
  esac
  sleep 0.5
done
[ "$state" = COMPLETED ] || { echo "bench-plan-reads: job $job is $state" >&2; exit 1; }
single=$(( $(rpc_count REQUEST_JOB_INFO_SINGLE) - single0 )) all=$(( $(rpc_count) - all0 ))
echo "plan_reads: step_starts=$((2 * STEPS)) job_info_single=$single rpcs=$all seconds=$((SECONDS - start))"
