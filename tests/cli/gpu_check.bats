#!/usr/bin/env bats
# scripts/gpu-check/ (docs/gpu.md), the parts that need no GPU: native.sh builds a `morph`
# package that answers as the build tree's does, and the morph-profile that pack.sh collects
# runs with the system's Open MPI components, PMIx and hwloc plugins hidden, as on a GPU
# machine that has none of them. In the plain build only (make check-unsanitized): the
# sanitized build's Python module needs the sanitizer runtimes preloaded.

bats_require_minimum_version 1.5.0
load common

plain_build_only() {
  [ -z "${MORPH_SANITIZERS:-}" ] || skip "sanitized build: make check-unsanitized runs this in the plain build"
}

# probe PYTHONPATH: what a plan, a data order and a refused plan give through that package.
probe() {
  PYTHONPATH=$1 "$PYTHON" -c '
import morph, morph.dataset as d
env = dict(MORPH_PLAN="dp=4 tp=2 pp=1 zero=1 offload=0 gc=0 ga=1 mb=1 mbs=4", RANK="5", WORLD_SIZE="8",
           LOCAL_RANK="5", MORPH_DP_RANK="2", MORPH_TP_RANK="1", MORPH_PP_RANK="0")
p = morph.plan(env)
print(p.layout, p.groups("dp"))
print(d.indices(48, 2, 4, samples=1000, seed=7, global_batch=16))
try:
    morph.plan(dict(env, RANK="9"))
except morph.MorphError as e:
    print("refused:", e)
'
}

@test "native.sh builds a morph package that answers as the build tree's" {
  plain_build_only
  [ -n "${PYTHON:-}" ] || skip "configure built no Python module (PYTHON is not set)"
  [ -d "$MORPH_BUILDDIR/python/morph" ] || skip "no morph package in $MORPH_BUILDDIR/python"
  local out=$BATS_TEST_TMPDIR/python
  MORPH_GPU_PACK=$BATS_TEST_TMPDIR/no-pack NATIVE_OPT=-O0 run bash "$MORPH_SRCDIR/scripts/gpu-check/native.sh" "$out"
  [ "$status" -eq 0 ] || { show_run; fail "native.sh failed"; }
  run probe "$MORPH_BUILDDIR/python"
  assert_ok
  local expected=$output
  run probe "$out"
  assert_ok
  [[ "$output" == "dp=4,tp=2,pp=1,zero=1 [["* ]] || { show_run; fail "no layout and groups"; }
  [[ "$output" == *"refused: "*"RANK"* ]] || { show_run; fail "the out-of-range RANK was not refused"; }
  [ "$output" = "$expected" ] || { show_run; fail "the build tree's package answers: $expected"; }
  [[ $(PYTHONPATH=$out "$PYTHON" -c 'import morph._native as n; print(n.__file__)') == "$out/"* ]] ||
    fail "the probe did not load the package native.sh built"
}

@test "pack.sh's morph-profile runs without the system's Open MPI components and hwloc plugins" {
  plain_build_only
  [ "$(id -u)" -eq 0 ] || skip "needs root (unshare -m hides the system's libraries)"
  command -v unshare >/dev/null || skip "no unshare"
  local lib
  lib=/usr/lib/$(gcc -print-multiarch)
  [ -d "$lib/openmpi/lib/openmpi3" ] || skip "not Debian's Open MPI layout"
  local pack=$BATS_TEST_TMPDIR/pack
  export MORPH_GPU_PACK=$pack
  run bash "$MORPH_SRCDIR/scripts/gpu-check/pack.sh" "$MORPH_BUILDDIR"
  [ "$status" -eq 0 ] || { show_run; [[ "$output" == *"not found"* ]] && skip "no morph-profile built"; fail "pack.sh failed"; }
  cp "$MORPH_CONF" "$BATS_TEST_TMPDIR/morph.conf"
  printf 'NodeType=gpu-check Gpu=h200 Gpus=1 Cpus=2 MemoryGiB=8 NetworkBandwidthGBps=200 Nics=1\nNodeName=gpu-check NodeType=gpu-check\n' \
    >>"$BATS_TEST_TMPDIR/morph.conf"
  # shellcheck disable=SC2016  # expanded by the inner shell
  run unshare -m bash -c '
    for d in "$0"/openmpi "$0"/pmix2 "$0"/hwloc /usr/share/openmpi /etc/openmpi; do
      [ -d "$d" ] && mount -t tmpfs none "$d"
    done
    source "$1/scripts/gpu-check/env.sh"
    MORPH_CONF=$2 SLURMD_NODENAME=gpu-check "$MORPH_GPU_PACK/bin/morph-profile" bandwidth --sizes 1K:4K --iters 2 &&
      "$MORPH_GPU_PACK/bin/morph-profile" topo' "$lib" "$MORPH_SRCDIR" "$BATS_TEST_TMPDIR/morph.conf"
  [ "$status" -eq 0 ] || { show_run; fail "the packed morph-profile failed"; }
  [[ "$output" == *"morph-profile bandwidth: 1 ranks on 1 node (gpu-check: 1)"* ]] || { show_run; fail "no bandwidth report"; }
  [[ "$output" == *"NodeType=gpu-check Gpu=h200"* ]] || { show_run; fail "no morph.conf records"; }
  [[ "$output" == *"this machine"*"NUMA nodes"* ]] || { show_run; fail "no topology"; }
}
