#!/usr/bin/env bash
# Installs the Debian packages, then builds and runs every test: with AddressSanitizer
# and UBSan (build/asan), then in a plain build those the sanitizers rule out, the Slurm
# integration tests on a local cluster among them (build/dist); morphd's scenarios (one
# GPU type per job, then two) with libFuzzer on the safetensors parser beside them, and
# the PyTorch example, on clusters of their own; the release tarball's contents with make
# install/uninstall (scripts/check-dist.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

morph_install_deps
morph_bootstrap

artifact=$(morph_artifact_dir)
if [ -n "$artifact" ]; then
  export MORPH_ARTIFACT_DIR="$artifact"
else
  morph_log "the Morphling artifact is not at ../shared/data/morphling-artifact: tests that need it will skip"
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Compile time is most of CI's. -Og compiles in two thirds of the time of -O1, which
# AddressSanitizer advises for speed (here: the build 411 s against 576 s, the test
# programs 250 s against 353 s), and its tests ran 327 s against 304 s; -g1 keeps the line
# tables the reports need.
morph_build "$MORPH_TOP/build/asan" --enable-sanitizers --enable-werror CFLAGS="-g1 -Og" CXXFLAGS="-g1 -Og"
# The report and credential tests authenticate with munge; a munged of their own keeps
# them independent of the test clusters that come and go beside them.
if [ "$(id -u)" -eq 0 ]; then "$MORPH_TOP/build/asan/tests/cluster/testcluster" munge; fi
morph_log "make check with -fsanitize=address,undefined"
if ! make -C "$MORPH_TOP/build/asan" -j"$MORPH_JOBS" check; then
  morph_check_failed "$MORPH_TOP/build/asan"
  exit 1
fi

# The plain build runs what the sanitized one skipped: the Slurm integration tests (the
# system's slurmctld does not load sanitized plugins), PyTorch's and the checks of results
# on whole workloads. The unit tests and the other command-line tests ran above.
morph_build "$MORPH_TOP/build/dist" CFLAGS="-g1 -O2" CXXFLAGS="-g1 -O2"
morph_log "make check-unsanitized"
if ! make -C "$MORPH_TOP/build/dist" -j"$MORPH_JOBS" check-unsanitized; then
  morph_check_failed "$MORPH_TOP/build/dist"
  exit 1
fi
# morphd's two scenarios, each on a cluster of its own, side by side: their jobs mostly
# wait out emulated steps (together they kept 68% of 2 cores busy, 234 s against 438 s one
# after the other). Not beside make check's cluster tests (87% busy): there MPI ranks
# starved an emulated node (make check-morphd runs them with the fault tests and the
# simulator's fidelity). libFuzzer on the safetensors parser takes the CPU they leave idle:
# at nice 19 it yields to them (the scenarios took 250 s against 242 s alone) and made 0.64
# million runs in two minutes, against 1.32 million in the one minute it had alone. The
# scenario's cluster also answers quick checks (a few seconds each): pending jobs that
# cannot start get no GPUs, a partition's MaxNodes lowered since submission, a partition
# left with one of a GPU type's nodes, morph.conf read again on SIGHUP, slurm.conf without
# RequeueExit=75, a Morph job whose batch script is not morphrun --driver, and ended jobs
# purged after PurgeJobsAfterDays. make check-morphd runs the fault tests besides.
morph_log "morphd on two local clusters at once: grow, shrink for a guaranteed job, grow back, and a job moved out of a guaranteed job's way; pending jobs that cannot start, a partition's MaxNodes and nodes; a job spans an a100 and a v100 node, and back; beside them, fuzzing the safetensors parser for 120 s"
out=$MORPH_TOP/build/dist/tests
export MORPH_SRCDIR=$MORPH_TOP MORPH_BUILDDIR=$MORPH_TOP/build/dist
scenarios=("grow, shrink" "fragmented GPUs" "cannot start get no GPUs" "MaxNodes lowered" "partition left with one" SIGHUP
  RequeueExit "never signalled" PurgeJobsAfterDays)
filter=$(IFS='|'; echo "${scenarios[*]}")
bats -f "$filter" "$MORPH_TOP/tests/cluster/morphd.bats" >"$out/cluster/morphd-scenario.out" 2>&1 &
grow=$!
bats "$MORPH_TOP/tests/cluster/morphd_hetero.bats" >"$out/cluster/morphd-hetero.out" 2>&1 &
hetero=$!
nice -n 19 make -C "$MORPH_TOP/build/dist" fuzz FUZZ_SECONDS=120 >"$out/fuzz.out" 2>&1 &
fuzz=$!
trap 'kill "$grow" "$hetero" "$fuzz" 2>/dev/null || true' EXIT  # a run cut short takes them with it
failed=
wait "$grow" || failed+=" morphd.bats"
# A scenario renamed away from its pattern would drop out unnoticed (bats -f runs what matches).
grep -qx "1\.\.${#scenarios[@]}" "$out/cluster/morphd-scenario.out" ||
  failed+=" morphd.bats(the filter did not match ${#scenarios[@]} tests)"
wait "$hetero" || failed+=" morphd_hetero.bats"
cat "$out/cluster/morphd-scenario.out" "$out/cluster/morphd-hetero.out"
if wait "$fuzz"; then
  grep -E '^(stat::|Done )' "$out/fuzz.out" || true
else
  cat "$out/fuzz.out"
  failed+=" fuzz"
fi
trap - EXIT
[ -z "$failed" ] || { morph_log "failed:$failed"; exit 1; }
# The PyTorch example under morphrun --driver through the two changes that need Slurm, a
# shrink and a requeue (make check-torch runs the six; make check the rest without Slurm).
morph_log "the PyTorch example on the local cluster: a shrink and a requeue, each continuing the loss"
if [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null; then
  CASES="less-dp more-dp" make -C "$MORPH_TOP/build/dist" check-torch
else
  morph_log "the local Slurm cluster needs root and Slurm: skipped"
fi
integration="$MORPH_TOP/build/dist/tests/cluster/slurm_integration.log"
morph_log "Slurm integration: $(grep -c '^ok' "$integration") ok, $(grep -c '# skip' "$integration") skipped"
grep -m 1 '# skip' "$integration" || true

# `make distcheck` would build and test a third time (about 25 minutes on CI's two cores);
# what it adds to the runs above is checked here in seconds.
morph_log "the release tarball and make install/uninstall (make distcheck is the release-time check)"
"$MORPH_TOP/scripts/check-dist.sh" "$MORPH_TOP/build/dist"

morph_log "all tests passed"
