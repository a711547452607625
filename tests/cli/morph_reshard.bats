#!/usr/bin/env bats
# morph reshard and morph-reshard-mpi on synthetic checkpoints (tests/cli/make_checkpoint):
# round trips, plans, MPI against threads, and every kind of bad input.
# Environment and helpers: common.bash.

# shellcheck disable=SC2016  # jq filters are single-quoted on purpose

bats_require_minimum_version 1.5.0
load common

make_checkpoint() {
  "$MORPH_BUILDDIR/tests/cli/make_checkpoint" "$@" || fail "make_checkpoint $*"
}

# same_files A B: every rank file of A is byte-identical in B.
same_files() {
  local f
  for f in "$1"/rank_*.safetensors; do
    cmp -s "$f" "$2/$(basename "$f")" || fail "$(basename "$f") differs between $1 and $2"
  done
}

# lying_checkpoint DIR: a 2-layer checkpoint (dp=1) under DIR/a and copies of it whose
# index.json lies about the spec: DIR/layers (1,000,000 layers), DIR/param (a layer-1
# parameter said to be of layer 0), DIR/dropped (layer 1 left out of the spec).
lying_checkpoint() {
  local d=$1
  make_checkpoint "$d/a" dp=1 2 16 50
  cp -r "$d/a" "$d/layers"
  jq '.spec.layers = 1000000' "$d/a/index.json" >"$d/layers/index.json"
  cp -r "$d/a" "$d/param"
  jq '(.spec.params[] | select(.name == "layers.1.input_layernorm.weight") | .layer) = 0' \
    "$d/a/index.json" >"$d/param/index.json"
  cp -r "$d/a" "$d/dropped"
  jq '.spec.layers = 1 | .spec.params |= map(select(.layer != 1))' "$d/a/index.json" >"$d/dropped/index.json"
}

@test "reshard: dp=2,tp=2,pp=2,zero=1 -> dp=1,tp=4,pp=1,zero=0 -> back is bit-identical" {
  local d=$BATS_TEST_TMPDIR
  make_checkpoint "$d/a" dp=2,tp=2,pp=2,zero=1 4 16 50
  morph reshard --from "$d/a" --to "$d/b" --layout dp=1,tp=4,pp=1,zero=0
  assert_ok
  [[ "$output" == *"(dp=2,tp=2,pp=2,zero=1) -> $d/b (dp=1,tp=4,pp=1,zero=0)"* ]] || fail "summary" "$output"
  [ "$(ls "$d/b"/rank_*.safetensors | wc -l)" -eq 4 ] || fail "expected 4 files"
  [ ! -e "$d/b.partial" ] || fail "a partial folder was left"
  morph reshard --from "$d/b" --to "$d/back" --layout dp=2,tp=2,pp=2,zero=1
  assert_ok
  same_files "$d/a" "$d/back"
}

@test "reshard --plan-only prints reads per new rank and bytes per node pair, and writes nothing" {
  local d=$BATS_TEST_TMPDIR
  make_checkpoint "$d/a" dp=1,tp=4,pp=1,zero=0
  morph reshard --from "$d/a" --layout tp=2 --plan-only --from-nodes n1,n1,n2,n2 --to-nodes n1,n2
  assert_ok
  [[ "$output" == *"reshard plan dp=1,tp=4,pp=1,zero=0 -> dp=1,tp=2,pp=1,zero=0"* ]] || fail "header" "$output"
  [[ "$output" == *"n1"*"n1"* ]] || fail "no node pairs" "$output"
  [ ! -e "$d/b" ] || fail "plan-only wrote something"
}

@test "reshard --plan-only --json: one entry per new rank, local reads where copies exist" {
  require_jq
  local d=$BATS_TEST_TMPDIR
  make_checkpoint "$d/a" dp=2,tp=1,pp=1,zero=0
  morph --json reshard --from "$d/a" --layout dp=1 --plan-only --from-nodes n1,n2 --to-nodes n2
  assert_ok
  local file
  file=$(save_json plan)
  jq_true "$file" '.ranks | length == 1'
  jq_true "$file" '[.ranks[0].ops[].from_rank] | all(. == 1)'
  jq_true "$file" '.node_pairs | length == 1 and .[0].from == "n2" and .[0].to == "n2"'
}

@test "reshard --plan-only --json: streamed file by file, every new rank once, the totals match the reads" {
  require_jq
  local d=$BATS_TEST_TMPDIR
  make_checkpoint "$d/a" dp=1,tp=2,pp=1,zero=0 4 16 50
  morph --json reshard --from "$d/a" --layout dp=2,tp=2,pp=2 --plan-only
  assert_ok
  local file
  file=$(save_json plan)
  # Files are planned replica group by replica group: ranks 0 and 2 share one file.
  jq_true "$file" '[.ranks[].rank] == [0,2,4,6,1,3,5,7]'
  jq_true "$file" '.bytes > 0 and .bytes == ([.ranks[].ops[].bytes] | add)'
  jq_true "$file" '.from == "dp=1,tp=2,pp=1,zero=0" and .to == "dp=2,tp=2,pp=2,zero=0"'
  morph reshard --from "$d/a" --layout dp=2,tp=2,pp=2 --plan-only
  assert_ok
  local gb
  gb=$(jq -r '.bytes / 1e9 * 1000 | round / 1000' "$file")
  [[ "$output" == *"$(printf '%.3f' "$gb") GB to read"* ]] || fail "text and JSON totals differ ($gb)" "$output"
}

@test "morph-reshard-mpi on 3 processes builds the same files as morph reshard" {
  command -v mpirun >/dev/null || skip "mpirun not found"
  [ -x "$MORPH_BUILDDIR/launcher/morph-reshard-mpi" ] || skip "built without MPI"
  local d=$BATS_TEST_TMPDIR flags=(--oversubscribe)
  [ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
  make_checkpoint "$d/a" dp=2,tp=2,pp=2,zero=1 4 16 50
  morph reshard --from "$d/a" --to "$d/threads" --layout dp=3,tp=1,pp=2,zero=2
  assert_ok
  # LeakSanitizer cannot attribute Open MPI's own allocations (see continuity.sh).
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    run mpirun "${flags[@]}" -np 3 -x OMPI_MCA_btl=self,vader "$MORPH_BUILDDIR/launcher/morph-reshard-mpi" \
    --from "$d/a" --to "$d/mpi" --layout dp=3,tp=1,pp=2,zero=2
  [ "$status" -eq 0 ] || fail "morph-reshard-mpi failed" "$output"
  same_files "$d/threads" "$d/mpi"
  cmp -s "$d/threads/index.json" "$d/mpi/index.json" || fail "index.json differs"
}

@test "bad input: reshard into an existing folder, with a bad layout, or from a non-checkpoint" {
  local d=$BATS_TEST_TMPDIR
  make_checkpoint "$d/a" dp=2
  morph reshard --from "$d/a" --to "$d/a" --layout dp=1
  assert_morph_error "$d/a" "already exists"
  morph reshard --from "$d/a" --to "$d/b" --layout dp=2,ep=2
  assert_morph_error --layout ep
  morph reshard --from "$d/a" --to "$d/b" --layout tp=3
  assert_morph_error tp=3 "does not divide"
  morph reshard --from "$d" --to "$d/b" --layout dp=1
  assert_morph_error index.json
  morph reshard --from "$d/a" --layout dp=1
  assert_morph_error --to
  [ ! -e "$d/b" ] && [ ! -e "$d/b.partial" ] || fail "something was written"
}

@test "bad input: a corrupted, truncated or lying checkpoint is refused and nothing is written" {
  local d=$BATS_TEST_TMPDIR
  make_checkpoint "$d/a" dp=2
  cp -r "$d/a" "$d/corrupt"
  printf '\x01' | dd of="$d/corrupt/rank_00001.safetensors" bs=1 seek=200 conv=notrunc status=none
  morph reshard --from "$d/corrupt" --to "$d/b" --layout dp=1
  assert_morph_error rank_00001.safetensors checksum
  cp -r "$d/a" "$d/short"
  truncate -s 100 "$d/short/rank_00000.safetensors"
  morph reshard --from "$d/short" --to "$d/b" --layout dp=1 --no-verify
  assert_morph_error rank_00000.safetensors bytes
  # The index says tp=2 but the files were written for dp=2: shapes do not match.
  cp -r "$d/a" "$d/lie"
  jq '.layout.dp = 1 | .layout.tp = 2' "$d/a/index.json" >"$d/lie/index.json"
  morph reshard --from "$d/lie" --to "$d/b" --layout dp=1 --no-verify
  assert_morph_error "old rank 0" "the layout needs"
  # A header that lies about its offsets.
  cp -r "$d/a" "$d/header"
  printf '\xff\xff\xff\xff' | dd of="$d/header/rank_00000.safetensors" bs=1 seek=0 conv=notrunc status=none
  morph reshard --from "$d/header" --to "$d/b" --layout dp=1 --no-verify
  assert_morph_error rank_00000.safetensors
  [ ! -e "$d/b" ] && [ ! -e "$d/b.partial" ] || fail "something was written"
}

@test "bad input: an index.json whose spec lies about the tensors is refused and nothing is written" {
  require_jq
  local d=$BATS_TEST_TMPDIR
  lying_checkpoint "$d"
  # Issue 10 item 9: every real layer went to stage 0 of pp=2, with exit 0.
  morph reshard --from "$d/layers" --to "$d/b" --layout pp=2
  assert_morph_error "$d/layers/index.json" "spec.layers=1000000 but the tensors hold layers 0-1"
  morph reshard --from "$d/layers" --layout pp=2 --plan-only
  assert_morph_error "$d/layers/index.json" "spec.layers=1000000 but the tensors hold layers 0-1"
  morph reshard --from "$d/param" --to "$d/b" --layout pp=2
  assert_morph_error "$d/param/index.json" "spec.params[9].layer=0" "'layers.1.input_layernorm.weight'"
  morph reshard --from "$d/dropped" --to "$d/b" --layout dp=2
  assert_morph_error "$d/dropped/index.json" "rank_00000.safetensors holds tensor 'layers.1."
  [ ! -e "$d/b" ] && [ ! -e "$d/b.partial" ] || fail "something was written"
  morph reshard --from "$d/a" --to "$d/b" --layout pp=2
  assert_ok
}

@test "morph-reshard-mpi refuses an index.json whose spec lies about the tensors" {
  require_jq
  command -v mpirun >/dev/null || skip "mpirun not found"
  [ -x "$MORPH_BUILDDIR/launcher/morph-reshard-mpi" ] || skip "built without MPI"
  local d=$BATS_TEST_TMPDIR flags=(--oversubscribe)
  [ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
  lying_checkpoint "$d"
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    run --separate-stderr mpirun "${flags[@]}" -np 2 -x OMPI_MCA_btl=self,vader \
    "$MORPH_BUILDDIR/launcher/morph-reshard-mpi" --from "$d/layers" --to "$d/b" --layout pp=2
  [ "$status" -ne 0 ] || fail "morph-reshard-mpi exited 0" "$output"
  # shellcheck disable=SC2154  # $stderr is set by run --separate-stderr
  [[ "$stderr" == *"$d/layers/index.json: spec.layers=1000000 but the tensors hold layers 0-1"* ]] ||
    fail "no message naming index.json and spec.layers" "$stderr"
  [ ! -e "$d/b" ] && [ ! -e "$d/b.partial" ] || fail "something was written"
}
