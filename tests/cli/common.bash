# Helpers shared by the bats tests of the morph command line (morph_cli.bats,
# morph_simulate.bats, morph_workloads.bats and the others beside them).
#
# The environment comes from AM_TESTS_ENVIRONMENT (tests/local.mk): MORPH_CONF,
# MORPH_CATALOG, MORPH_ARTIFACT_SPEC, MORPH_SRCDIR, MORPH_BUILDDIR. Run by hand from the
# source tree, the defaults below assume an in-tree build folder named build/.
# Tests that need the Morphling artifact skip when it is absent; point
# MORPH_ARTIFACT_DIR at it if it is not at $MORPH_SRCDIR/../shared/data/morphling-artifact.

# shellcheck shell=bash
setup() {
  : "${MORPH_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
  : "${MORPH_BUILDDIR:=$MORPH_SRCDIR/build}"
  : "${MORPH_CONF:=$MORPH_SRCDIR/etc/morph.conf}"
  : "${MORPH_CATALOG:=$MORPH_SRCDIR/share/models.json}"
  : "${MORPH_ARTIFACT_SPEC:=$MORPH_SRCDIR/share/morphling-artifact.json}"
  export MORPH_SRCDIR MORPH_BUILDDIR MORPH_CONF MORPH_CATALOG MORPH_ARTIFACT_SPEC
  MORPH="$MORPH_BUILDDIR/tools/morph/morph"
  ARTIFACT="${MORPH_ARTIFACT_DIR:-$MORPH_SRCDIR/../shared/data/morphling-artifact}"
  [ -x "$MORPH" ] || { echo "morph binary not found at $MORPH" >&2; return 1; }
}

# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------

fail() {
  printf '%s\n' "$@" >&2
  return 1
}

# What the last `run` saw, for failure messages.
show_run() {
  printf 'exit status: %s\n--- stdout ---\n%s\n--- stderr ---\n%s\n' "$status" "$output" "${stderr-}" >&2
}

require_artifact() {
  [ -d "$ARTIFACT" ] || skip "artifact data not found at $ARTIFACT"
}

# plain_build_only: a test of what the model or the policy achieves on the artifact's whole
# workloads (Table 4's cells, the fidelity script's lines). Under the sanitizers it takes
# minutes and runs no code that the shorter tests leave out, so there it skips; the plain
# build runs it (make check-unsanitized, scripts/run-tests.sh).
plain_build_only() {
  [ -z "${MORPH_SANITIZERS:-}" ] || skip "a check of results on whole workloads: the plain build runs it"
}

# workload NAME: the artifact's workload-NAME.csv (base, bp, mt).
workload() { echo "$ARTIFACT/workloads/workload-$1.csv"; }

require_jq() {
  command -v jq >/dev/null || skip "jq is required to check --json output"
}

# morph ARGS...: run morph with stdout and stderr kept apart ($output, $stderr).
morph() {
  run --separate-stderr "$MORPH" "$@"
}

# assert_ok: the last run exited 0 and wrote nothing on stderr.
assert_ok() {
  if [ "$status" -ne 0 ] || [ -n "$stderr" ]; then
    show_run
    fail "expected exit 0 and an empty stderr"
  fi
}

# assert_morph_error WORD...: the last run failed cleanly. A non-zero exit that is neither
# a crash (>= 126) nor morph's internal-error status (70), nothing on stdout, and exactly
# one line on stderr that starts with "morph:" and contains every WORD (fixed strings).
assert_morph_error() {
  local problems=()
  [ "$status" -ne 0 ] || problems+=("exit status 0, expected a failure")
  [ "$status" -ne 70 ] || problems+=("exit status 70: morph reported an internal error")
  [ "$status" -lt 126 ] || problems+=("exit status $status: killed or crashed")
  [ -z "$output" ] || problems+=("stdout is not empty")
  local n=0
  [ -z "$stderr" ] || n=$(printf '%s\n' "$stderr" | wc -l)
  { [ -n "$stderr" ] && [ "$n" -eq 1 ]; } || problems+=("stderr has $n lines, expected exactly one")
  [[ "$stderr" == "morph: "* ]] || problems+=("stderr does not start with 'morph: '")
  local word
  for word in "$@"; do
    [[ "$stderr" == *"$word"* ]] || problems+=("stderr does not mention '$word'")
  done
  if [ "${#problems[@]}" -gt 0 ]; then
    show_run
    fail "${problems[@]}"
  fi
}

# save_json NAME: write $output to a scratch file and print its path.
save_json() {
  local file="$BATS_TEST_TMPDIR/$1.json"
  printf '%s\n' "$output" >"$file"
  echo "$file"
}

# jq_true FILE FILTER [ARGS...]: FILTER must evaluate to true on FILE.
jq_true() {
  local file=$1 filter=$2
  shift 2
  if ! jq -e "$@" "$filter" "$file" >/dev/null; then
    fail "jq check failed: $filter"
  fi
}
