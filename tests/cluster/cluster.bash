# Shared by the bats files that run on a local Slurm cluster of their own
# (tests/cluster/testcluster): each file takes its own port and folder, so that
# `make check -j` can run them side by side.
# shellcheck shell=bash

fail() {
  printf '%s\n' "$@" >&2
  # Each node's last errors: a step that failed to launch says why only there (CI keeps
  # no cluster logs; docs/launcher.md, Known limits).
  local log
  for log in "${MORPH_TESTCLUSTER_DIR:-/tmp/morph-testcluster}"/log/slurmd-*.log; do
    [ -f "$log" ] || continue
    printf '%s, last errors:\n' "${log##*/}" >&2
    grep -iE "error|fail" "$log" | tail -n 8 >&2 || true
  done
  return 1
}

# job_field JOB KEY, job_record JOB and record_value JOB KEY: one field of `scontrol show
# job`, the Morph record in its AdminComment and one key of it (the files define their own
# waits, or take job_control.bash's with die and $work).
# shellcheck source=tests/cluster/job_control.bash
source "$(dirname "${BASH_SOURCE[0]}")/job_control.bash"

# cluster_unavailable [BUILT_PROGRAM...]: why the file is skipped (empty: it can run).
cluster_unavailable() {
  [ -z "${MORPH_SKIP_CLUSTER_TESTS:-}" ] || { echo "MORPH_SKIP_CLUSTER_TESTS is set"; return; }
  [ "$(id -u)" -eq 0 ] || { echo "needs root to run slurmctld and slurmd"; return; }
  command -v slurmctld >/dev/null || { echo "Slurm is not installed (scripts/run-tests.sh installs it)"; return; }
  command -v srun >/dev/null || { echo "srun is not installed"; return; }
  [ -x "$MORPH_BUILDDIR/tests/cluster/testcluster" ] || { echo "no tests/cluster/testcluster in $MORPH_BUILDDIR"; return; }
  [ -f "$MORPH_BUILDDIR/plugins/.libs/job_submit_morph.so" ] ||
    { echo "the plugins were not built (configure found no Slurm)"; return; }
  [ -z "${MORPH_SANITIZERS:-}" ] ||
    { echo "a sanitizer build: the system's slurmctld cannot load sanitized plugins (the plain build runs these)"; return; }
  local program
  for program in "$@"; do
    [ -x "$MORPH_BUILDDIR/$program" ] || { echo "no $program (configure found no hwloc, Open MPI or Slurm)"; return; }
  done
}

# cluster_setup PORT DIR [BUILT_PROGRAM...]: in setup_file. Exports MORPH_CLUSTER_SKIP
# (the reason, when the file cannot run) or SLURM_CONF and MORPH_CONF of a fresh cluster
# (of CLUSTER_NODES, testcluster's --nodes, when set).
cluster_setup() {
  : "${MORPH_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
  : "${MORPH_BUILDDIR:=$MORPH_SRCDIR/build}"
  export MORPH_SRCDIR MORPH_BUILDDIR
  export MORPH_TESTCLUSTER_PORT=$1 MORPH_TESTCLUSTER_DIR=$2
  shift 2
  MORPH_CLUSTER_SKIP=$(cluster_unavailable "$@")
  export MORPH_CLUSTER_SKIP
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  "$MORPH_BUILDDIR/tests/cluster/testcluster" down >/dev/null 2>&1 || true
  # Through a file, not $(...): a munged that `up` starts must not hold a pipe open.
  local up="$MORPH_TESTCLUSTER_DIR.up"
  "$MORPH_BUILDDIR/tests/cluster/testcluster" up ${CLUSTER_NODES:+--nodes "$CLUSTER_NODES"} </dev/null >"$up" 2>&1 ||
    { cat "$up" >&3; return 1; }
  SLURM_CONF=$(sed -n 's/^SLURM_CONF=//p' "$up")
  export SLURM_CONF MORPH_CONF="$MORPH_TESTCLUSTER_DIR/morph.conf"
}

# cluster_teardown: in teardown_file. MORPH_KEEP_CLUSTER=1 leaves the cluster up, with its
# logs and work folder, for a look after a failure (`testcluster down` stops it).
cluster_teardown() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || return 0
  [ -z "${MORPH_KEEP_CLUSTER:-}" ] || { echo "# kept: SLURM_CONF=$SLURM_CONF" >&3; return 0; }
  "$MORPH_BUILDDIR/tests/cluster/testcluster" down >/dev/null 2>&1 || true
}
