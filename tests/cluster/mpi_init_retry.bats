#!/usr/bin/env bats
# mpi_init_retry, the wrapper of the cluster tests' plain srun MPI steps: one more run only
# after Open MPI's TCP start-up failure, and every other outcome passed through unchanged.
# Needs no cluster: the "steps" are shell commands that count their runs.

bats_require_minimum_version 1.5.0

setup() {
  RETRY="$BATS_TEST_DIRNAME/mpi_init_retry"
  RUNS="$BATS_TEST_TMPDIR/runs"
  : >"$RUNS"
}

# step FIRST_STATUS FIRST_STDERR: a command that fails with FIRST_STATUS and FIRST_STDERR on
# its first run and succeeds on later ones, printing its run number on stdout.
step() {
  printf 'echo run >>%q; n=$(wc -l <%q); echo "out $n"; ' "$RUNS" "$RUNS"
  printf '[ "$n" -gt 1 ] && exit 0; echo %q >&2; exit %d' "$2" "$1"
}

@test "Open MPI's TCP start-up failure: one more run, whose status and output are the result" {
  run --separate-stderr "$RETRY" bash -c "$(step 139 'WARNING: Open MPI failed to TCP connect to a peer MPI process.')"
  [ "$status" -eq 0 ]
  [ "$output" = "out 2" ]
  [ "$(wc -l <"$RUNS")" -eq 2 ]
  [[ $stderr == *"mpi_init_retry: exit 139 with Open MPI's TCP start-up failure"* ]]
  [[ $stderr == *"failed to TCP connect"* ]]
}

@test "any other failure is not retried: its status, stdout and stderr come back unchanged" {
  run --separate-stderr "$RETRY" bash -c "$(step 3 'trainer: bad layout')"
  [ "$status" -eq 3 ]
  [ "$output" = "out 1" ]
  [ "$stderr" = "trainer: bad layout" ]
  [ "$(wc -l <"$RUNS")" -eq 1 ]
}

@test "a second failure is the command's own" {
  run --separate-stderr "$RETRY" bash -c 'echo x >>"$0"; echo "Open MPI failed to TCP connect" >&2; exit 7' "$RUNS"
  [ "$status" -eq 7 ]
  [ "$(wc -l <"$RUNS")" -eq 2 ]
}

@test "a success is passed through; no command is a usage error" {
  run --separate-stderr "$RETRY" sh -c 'echo hello; echo note >&2'
  [ "$status" -eq 0 ]
  [ "$output" = hello ]
  [ "$stderr" = note ]
  run "$RETRY"
  [ "$status" -eq 64 ]
}
