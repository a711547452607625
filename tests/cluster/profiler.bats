#!/usr/bin/env bats
# morph-profile bandwidth on the local Slurm cluster (tests/cluster/testcluster): MPI ranks
# on two emulated nodes measure point-to-point and allreduce bandwidth inside a node and
# across nodes, and the morph.conf records they write are accepted by morph plan.
#
# Its own cluster (port 18270, /tmp/morph-testcluster-profile), apart from
# slurm_integration.bats'. Needs root, Slurm, munge and Open MPI; otherwise every test is
# skipped with the reason. The emulated nodes share this host, so "across nodes" is TCP
# over loopback: the figures check the plumbing, not a network.

bats_require_minimum_version 1.5.0

load cluster

setup_file() {
  cluster_setup 18270 /tmp/morph-testcluster-profile profiler/morph-profile
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  export WORK="$MORPH_TESTCLUSTER_DIR/profile"
  install -d -m 1777 "$WORK"
  # One run for all tests: 2 a100 nodes x 2 ranks, a short sweep.
  OMPI_MCA_btl=self,tcp timeout 300 "$MORPH_SRCDIR/tests/cluster/mpi_init_retry" \
    srun --mpi=pmix -N 2 --ntasks-per-node=2 -C a100-80g -p gpu \
    "$MORPH_BUILDDIR/profiler/morph-profile" bandwidth --sizes 4K:4M --iters 10 --out "$WORK/fragment.conf" \
    >"$WORK/report.txt" 2>"$WORK/stderr.txt"
  echo $? >"$WORK/status"
}

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
}

teardown_file() { cluster_teardown; }

show_report() {
  printf -- '--- report ---\n%s\n--- stderr ---\n%s\n' "$(cat "$WORK/report.txt")" "$(cat "$WORK/stderr.txt")" >&2
}

# rows LIBRARY TEST SCOPE: the report's rows of one test.
rows() { awk -v l="$1" -v t="$2" -v s="$3" '$1 == l && $2 == t && $3 == s' "$WORK/report.txt"; }

@test "bandwidth under srun --mpi=pmix: exits 0 and groups 4 ranks into 2 emulated nodes" {
  [ "$(cat "$WORK/status")" -eq 0 ] || { show_report; false; }
  grep -qE '^morph-profile bandwidth: 4 ranks on 2 nodes \(a100-[0-9]+: 2, a100-[0-9]+: 2\)' "$WORK/report.txt" ||
    { show_report; false; }
  # No GPU here: said once, MPI only.
  [ "$(grep -c '^GPU: no CUDA device\|^GPU: built without CUDA' "$WORK/report.txt")" -eq 1 ] || { show_report; false; }
}

@test "bandwidth: ping-pong and allreduce rows inside a node and across nodes, all positive" {
  local scope test
  for test in pingpong allreduce; do
    for scope in intra inter; do
      [ "$(rows MPI "$test" "$scope" | wc -l)" -eq 6 ] || { show_report; echo "no 6 rows (4K..4M) of MPI $test $scope" >&2; false; }
      # time, algbw and busbw all positive
      rows MPI "$test" "$scope" | awk '!($6 > 0 && $7 > 0 && $8 > 0) { exit 1 }' ||
        { show_report; echo "MPI $test $scope has a non-positive figure" >&2; false; }
    done
  done
  # Across nodes, the allreduce runs on one rank per node; inside one, on both ranks.
  rows MPI allreduce inter | awk '$4 != 2 { exit 1 }'
  rows MPI allreduce intra | awk '$4 != 2 { exit 1 }'
}

@test "bandwidth: the morph.conf records replace NetworkBandwidthGBps and keep the rest" {
  local f="$WORK/fragment.conf"
  [ -s "$f" ] || { show_report; false; }
  grep -q '^# Measured: NetworkBandwidthGBps (B_inter) = peak MPI allreduce busbw across 2 nodes' "$f" || { cat "$f" >&2; false; }
  grep -q '^# As configured, not measured.*LinkBandwidthGBps (B_intra), PcieBandwidthGBps (B_pcie)' "$f" || { cat "$f" >&2; false; }
  # The GpuType record is the configured one, key for key.
  diff <(grep '^GpuType=a100-80g ' "$MORPH_CONF" | tr -s ' ' | sed 's/Speed=1.0 /Speed=1 /') <(grep '^GpuType=' "$f") ||
    { cat "$f" >&2; false; }
  local node configured measured
  node=$(grep '^NodeType=' "$f")
  [[ "$node" == "NodeType=emu-a100-80g-8 Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps="*" Nics=2 Features=a100-80g" ]] ||
    { echo "unexpected record: $node" >&2; false; }
  measured=$(sed -n 's/.*NetworkBandwidthGBps=\([0-9.]*\).*/\1/p' <<<"$node")
  configured=$(grep '^NodeType=emu-a100-80g-8 ' "$MORPH_CONF" | sed -n 's/.*NetworkBandwidthGBps=\([0-9.]*\).*/\1/p')
  [ "$configured" = 25 ]
  awk -v m="$measured" 'BEGIN { exit !(m > 0 && m != 25) }' || { echo "NetworkBandwidthGBps=$measured" >&2; false; }
}

@test "bandwidth: morph plan --config accepts the records unchanged" {
  run --separate-stderr "$MORPH_BUILDDIR/tools/morph/morph" --config "$WORK/fragment.conf" \
    --catalog "$MORPH_SRCDIR/share/models.json" plan --model gpt2-1.5b --batch 64 --gpus 2x8xa100-80g
  [ "$status" -eq 0 ] || { echo "$output $stderr" >&2; false; }
  [ -z "$stderr" ] || { echo "$stderr" >&2; false; }
  [[ "$output" == *$'\nrank  plan'* ]] || { echo "$output" >&2; false; }
}

@test "bandwidth: a node that morph.conf does not list is a one-line error after the report" {
  printf 'GpuType=a100-80g MemoryGiB=80 Speed=1 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n' \
    >"$WORK/other.conf"
  OMPI_MCA_btl=self,tcp run --separate-stderr timeout 120 "$MORPH_SRCDIR/tests/cluster/mpi_init_retry" \
    srun --mpi=pmix -N 1 -n 2 -C a100-80g -p gpu \
    "$MORPH_BUILDDIR/profiler/morph-profile" --config "$WORK/other.conf" bandwidth --sizes 4K:16K --iters 2
  [ "$status" -ne 0 ] || { echo "$output" >&2; false; }
  [[ "$output" == *"MPI      pingpong   intra"* ]] || { echo "$output" >&2; false; }
  grep -q "^morph-profile: node 'a100-[0-9]*' is not a NodeName of $WORK/other.conf" <<<"$stderr" || { echo "$stderr" >&2; false; }
}
