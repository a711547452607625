#!/usr/bin/env bats
# morph hetero: JABAS configurations of a global batch on every allocation of GPU pairs of
# the quickstart profile's servers (shared/data/jabas-quickstart), the --json output and bad input.
# Environment and helpers: common.bash.

# shellcheck disable=SC2016  # jq filters are single-quoted on purpose

bats_require_minimum_version 1.5.0
load common

PROFILE="${MORPH_JABAS_PROFILE:-${MORPH_SRCDIR:-$BATS_TEST_DIRNAME/../..}/../shared/data/jabas-quickstart}"

require_profile() {
  [ -f "$PROFILE/cluster_info.json" ] || skip "JABAS quickstart profile not found at $PROFILE"
}

# A scratch copy of the profile that a test may break.
scratch_profile() {
  cp -r "$PROFILE" "$BATS_TEST_TMPDIR/profile"
  echo "$BATS_TEST_TMPDIR/profile"
}

@test "hetero: a table row for each of the eight allocations of GPU pairs (seed 004 §6.3)" {
  require_profile
  morph hetero --profile "$PROFILE" --batch 2048
  assert_ok
  [[ "$output" == *"global batch 2048"* ]] || fail "no title" "$output"
  local allocations
  allocations=$(printf '%s\n' "$output" | grep -E '^node[01]:[24]' | cut -d' ' -f1 | paste -sd' ')
  [ "$allocations" = "node0:2 node0:4 node1:2 node0:2+node1:2 node0:4+node1:2 node1:4 node0:2+node1:4 node0:4+node1:4" ] ||
    fail "expected the eight allocations in order, saw '$allocations'" "$output"
  # At 128 all eight GPUs hold at least 256 samples, but a pair of each server runs it.
  morph hetero --profile "$PROFILE" --batch 128
  assert_ok
  printf '%s\n' "$output" | grep -qE '^node0:4\+node1:4 +8 +- .*out of reach' || fail "both whole servers ran 128" "$output"
  printf '%s\n' "$output" | grep -qE '^node0:2\+node1:2 +4 +32 ' || fail "a pair of each did not run 128" "$output"
}

@test "hetero --json: every configuration keeps the global batch exactly" {
  require_profile
  require_jq
  for b in 256 1024 4096; do
    morph hetero --profile "$PROFILE" --batch "$b" --json
    assert_ok
    local f
    f=$(save_json "h$b")
    jq_true "$f" 'length == 8'
    jq_true "$f" 'all(.[] | select(.feasible); ([.gpu_groups[] | .gpus * .workers * .ga_steps] | add) * .local_batch == $b)' \
      --argjson b "$b"
    jq_true "$f" 'all(.[] | select(.feasible); .throughput_samples_per_s > 0 and .iteration_ms > 0)'
    jq_true "$f" 'all(.[]; (.server_gpus | add) == .gpus and (.server_gpus | length) == (.servers | length))'
    jq_true "$f" '.[7].servers == ["node0", "node1"] and .[7].server_gpus == [4, 4] and .[7].feasible'
  done
}

@test "hetero: a batch out of reach is one line naming --batch" {
  require_profile
  morph hetero --profile "$PROFILE" --batch 100
  assert_morph_error "--batch" "100" "out of reach"
}

@test "hetero: a batch whose search would take minutes is refused at once, naming the bound" {
  # 2^30 samples took 40 s and 640 MB before the bound; 2^27 is over it too.
  require_profile
  for batch in 1073741824 134217728; do
    morph hetero --profile "$PROFILE" --batch "$batch"
    assert_morph_error "batch $batch" "workers per group" "more than 1048576" "smaller batch"
  done
  morph hetero --profile "$PROFILE" --batch 4096
  [ "$status" -eq 0 ]
}

@test "hetero: a missing folder or file is named" {
  require_profile
  morph hetero --profile "$BATS_TEST_TMPDIR/nothing" --batch 256
  assert_morph_error "nothing" "missing"
  local p
  p=$(scratch_profile)
  rm "$p/comm_profile_data/intra_comm_profile_data.txt"
  morph hetero --profile "$p" --batch 256
  assert_morph_error "intra_comm_profile_data.txt"
}

@test "hetero: malformed JSON and a missing field name the file and the field" {
  require_profile
  local p
  p=$(scratch_profile)
  printf '{"lbs": 64,' >"$p/cluster_comp_profile_data/64/node1/resnet50_64_2_comp_profile.json"
  morph hetero --profile "$p" --batch 256
  assert_morph_error "resnet50_64_2_comp_profile.json" "not valid JSON"
  p=$(scratch_profile)
  printf '{"gpu_type": "x", "lbs": 64}' >"$p/cluster_mem_profile_data/64/node0/max_memory_profile_info.json"
  morph hetero --profile "$p" --batch 256
  assert_morph_error "64/node0/max_memory_profile_info.json" '"max_num_models"'
}

@test "hetero: --profile and --batch are required" {
  morph hetero --batch 256
  [ "$status" -ne 0 ] || fail "exit 0 without --profile"
  [[ "$stderr" == *"--profile"* ]] || fail "no mention of --profile" "$stderr"
}
