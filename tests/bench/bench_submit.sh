#!/usr/bin/env bash
# Submission overhead of the Morph plugin chain: two local clusters side by side, one with
# spank_morph and job_submit_morph, one without (testcluster --plain), and held jobs
# submitted to both in alternating rounds so that both see the same machine noise.
#   morph: sbatch -H --morph-model=gpt2-1.5b --morph-batch=16 --wrap=true
#   plain: sbatch -H --gres=gpu:a100-80g:1 -n 1 -c 4 --wrap=true   (what Morph requests)
# Last line: submit: plain_per_s=<x> morph_per_s=<y> ratio=<y/x>
set -euo pipefail
BUILDDIR=${MORPH_BUILDDIR:?set by make bench-submit}
JOBS=${MORPH_BENCH_JOBS:-500}
ROUND=50
[ "$(id -u)" -eq 0 ] || { echo "bench-submit: needs root (it starts local Slurm clusters)" >&2; exit 1; }
command -v slurmctld >/dev/null || { echo "bench-submit: Slurm is not installed" >&2; exit 1; }
testcluster=$BUILDDIR/tests/cluster/testcluster

morph_dir=/tmp/morph-bench-morph plain_dir=/tmp/morph-bench-plain
cleanup() {
  MORPH_TESTCLUSTER_DIR=$morph_dir "$testcluster" down >/dev/null 2>&1 || true
  MORPH_TESTCLUSTER_DIR=$plain_dir "$testcluster" down >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
morph_conf=$(MORPH_TESTCLUSTER_DIR=$morph_dir MORPH_TESTCLUSTER_PORT=18370 "$testcluster" up | tail -n 1)
plain_conf=$(MORPH_TESTCLUSTER_DIR=$plain_dir MORPH_TESTCLUSTER_PORT=18470 "$testcluster" up --plain | tail -n 1)
morph_conf=${morph_conf#SLURM_CONF=} plain_conf=${plain_conf#SLURM_CONF=}

# submit_round CONF N ARGS...: N held submissions; prints the seconds they took.
submit_round() {
  local conf=$1 n=$2 start end i
  shift 2
  start=$(date +%s.%N)
  for i in $(seq "$n"); do
    SLURM_CONF=$conf sbatch -H -Q -o /dev/null -D /tmp "$@" >/dev/null
  done
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}

morph_s=0 plain_s=0 done_jobs=0
# One warm-up submission each: the first Morph request fills job_submit_morph's cache.
submit_round "$morph_conf" 1 --morph-model=gpt2-1.5b --morph-batch=16 --wrap=true >/dev/null
submit_round "$plain_conf" 1 --gres=gpu:a100-80g:1 -n 1 -c 4 --wrap=true >/dev/null
while [ "$done_jobs" -lt "$JOBS" ]; do
  n=$(( JOBS - done_jobs < ROUND ? JOBS - done_jobs : ROUND ))
  plain_s=$(echo "$plain_s + $(submit_round "$plain_conf" "$n" --gres=gpu:a100-80g:1 -n 1 -c 4 --wrap=true)" | bc -l)
  morph_s=$(echo "$morph_s + $(submit_round "$morph_conf" "$n" --morph-model=gpt2-1.5b --morph-batch=16 --wrap=true)" | bc -l)
  done_jobs=$((done_jobs + n))
done
held=$(SLURM_CONF=$morph_conf squeue -h -t PD | wc -l)
[ "$held" -eq $((JOBS + 1)) ] || { echo "bench-submit: $held jobs held on the Morph cluster, expected $((JOBS + 1))" >&2; exit 1; }
plain_rate=$(echo "$JOBS / $plain_s" | bc -l)
morph_rate=$(echo "$JOBS / $morph_s" | bc -l)
printf 'jobs=%d plain_s=%.2f morph_s=%.2f\n' "$JOBS" "$plain_s" "$morph_s"
printf 'submit: plain_per_s=%.1f morph_per_s=%.1f ratio=%.3f\n' "$plain_rate" "$morph_rate" "$(echo "$morph_rate / $plain_rate" | bc -l)"
