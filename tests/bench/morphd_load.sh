#!/usr/bin/env bash
# One morphd round against a real slurmctld holding 5000 held Morph jobs (issue 13: under
# 1 s, reading from Slurm included). A local cluster of its own (port 19070,
# /tmp/morph-bench-load), jobs of three models submitted in parallel streams, then
# `morphd --once --dry-run` timed RUNS times from its start to its exit (configuration,
# catalog, state database, the reads from slurmctld, the round). The cluster goes down at
# the end, whatever happens.
#   MORPH_BENCH_LOAD_JOBS (5000), MORPH_BENCH_LOAD_RUNS (5), MORPH_BENCH_LOAD_STREAMS (4)
# Last line: load: jobs=<N> round_s=<median s>
set -euo pipefail
BUILDDIR=${MORPH_BUILDDIR:?set by make bench-morphd}
JOBS=${MORPH_BENCH_LOAD_JOBS:-5000}
RUNS=${MORPH_BENCH_LOAD_RUNS:-5}
STREAMS=${MORPH_BENCH_LOAD_STREAMS:-4}
skip() { echo "load: skipped: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "needs root (it starts a local Slurm cluster)"
command -v slurmctld >/dev/null || skip "Slurm is not installed"
[ -x "$BUILDDIR/daemon/morphd" ] || skip "no daemon/morphd in $BUILDDIR (configure found no Slurm, SQLite or MUNGE)"
testcluster=$BUILDDIR/tests/cluster/testcluster
export MORPH_TESTCLUSTER_PORT=19070 MORPH_TESTCLUSTER_DIR=/tmp/morph-bench-load

cleanup() {
  "$testcluster" down >/dev/null 2>&1 || true
  rm -f "$MORPH_TESTCLUSTER_DIR.up"
}
trap cleanup EXIT
cleanup
# Through a file, not $(...): a munged that `up` starts must not hold a pipe open.
up_log=$MORPH_TESTCLUSTER_DIR.up
"$testcluster" up </dev/null >"$up_log" 2>&1 || { cat "$up_log" >&2; exit 1; }
SLURM_CONF=$(sed -n 's/^SLURM_CONF=//p' "$up_log")
export SLURM_CONF MORPH_CONF=$MORPH_TESTCLUSTER_DIR/morph.conf

# submit_stream K: the K-th of STREAMS shares of the jobs, held, cycling over three models.
submit_stream() {
  local k=$1 i models=("gpt2-1.5b --morph-batch=16" "bert-336m --morph-batch=64" "vit-86m --morph-batch=256")
  for ((i = k; i < JOBS; i += STREAMS)); do
    # shellcheck disable=SC2086  # the model's two options
    sbatch -H -Q -o /dev/null -D /tmp --morph-model=${models[i % 3]} --wrap=true >/dev/null
  done
}
start=$(date +%s.%N)
for ((k = 0; k < STREAMS; ++k)); do submit_stream "$k" & done
wait
submit_s=$(echo "$(date +%s.%N) - $start" | bc -l)
held=$(squeue -h -t PD -o %A | wc -l)
[ "$held" -eq "$JOBS" ] || { echo "load: $held jobs pending, expected $JOBS" >&2; exit 1; }
printf 'submitted: jobs=%d s=%.1f\n' "$JOBS" "$submit_s"

times=()
for ((run = 1; run <= RUNS; ++run)); do
  start=$(date +%s.%N)
  "$BUILDDIR/daemon/morphd" --once --dry-run --state "$MORPH_TESTCLUSTER_DIR/load.db" \
    >"$MORPH_TESTCLUSTER_DIR/morphd.log" 2>&1 || { cat "$MORPH_TESTCLUSTER_DIR/morphd.log" >&2; exit 1; }
  s=$(echo "$(date +%s.%N) - $start" | bc -l)
  round=$(grep -o 'round: .*' "$MORPH_TESTCLUSTER_DIR/morphd.log")
  printf 'run %d: %.3f s (%s)\n' "$run" "$s" "$round"
  [[ $round == "round: $JOBS Morph jobs,"* ]] || { echo "load: morphd saw another job count" >&2; exit 1; }
  times+=("$s")
done
median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$(((RUNS + 1) / 2))p")
printf 'load: jobs=%d round_s=%.3f\n' "$JOBS" "$median"
