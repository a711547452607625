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

@test "hetero: auto-scaling (§6.3) picks the allocation of least epoch time over the forecast" {
  require_profile
  require_jq
  # Without a forecast, --batch throughout: the fastest allocation at 2048 (both servers).
  morph hetero --profile "$PROFILE" --batch 2048
  assert_ok
  [[ "$output" == *"auto-scaling (seed 004 §6.3): node0:4+node1:4 (8 GPUs), epoch "*" over 1 step of 100 iterations (batch 2048 throughout)"* ]] ||
    fail "not both whole servers" "$output"
  # Both whole servers cannot run 128, so over 128..1024 the epoch of each allocation that
  # runs all four is Σ p · t(B); the least wins, and is the one the command names.
  local b f least="" name
  for b in 128 256 512 1024; do
    morph hetero --profile "$PROFILE" --batch "$b" --json
    assert_ok
    f=$(save_json "a$b")
    jq -c '.[] | {k: ([.servers, .server_gpus] | tostring), ms: (if .feasible then .iteration_ms else null end)}' "$f"
  done >"$BATS_TEST_TMPDIR/steps"
  least=$(jq -rs 'group_by(.k) | map(select(length == 4 and all(.ms != null))) | map({k: .[0].k, s: ((map(.ms) | add) * 100 / 1000)})
    | min_by(.s) | "\(.k) \(.s)"' "$BATS_TEST_TMPDIR/steps")
  morph hetero --profile "$PROFILE" --batch 128 --forecast 128,256,512,1024 --json
  assert_ok
  f=$(save_json forecast)
  name=$(jq -r '.[] | select(.auto_scaling) | "\([.servers, .server_gpus] | tostring) \(.auto_scaling.epoch_s)"' "$f")
  [ "${name% *}" = "${least% *}" ] || fail "chose ${name}, least epoch ${least}"
  awk -v a="${name##* }" -v b="${least##* }" 'BEGIN { exit !(a - b < 1e-9 && b - a < 1e-9) }' ||
    fail "epoch ${name##* } s, summed ${least##* } s"
  jq_true "$f" '[.[] | select(.auto_scaling)] | length == 1 and .[0].auto_scaling.forecast_steps == 4'
  # A cost slack trades time for GPUs: within 2x of the least at 2048, fewer than 8 GPUs.
  morph hetero --profile "$PROFILE" --batch 2048 --cost-slack 1
  assert_ok
  [[ "$output" =~ auto-scaling\ \(seed\ 004\ §6.3\):\ [^\ ]+\ \(([0-9]+)\ GPUs\) ]] || fail "no auto-scaling line" "$output"
  [ "${BASH_REMATCH[1]}" -lt 8 ] || fail "slack 1 kept ${BASH_REMATCH[1]} GPUs" "$output"
  [[ "$output" == *"the fastest allocation takes"*"(cost slack 1)"* ]] || fail "no fastest epoch" "$output"
}

@test "hetero: a forecast batch no allocation runs, a bad forecast, interval or slack are named" {
  require_profile
  morph hetero --profile "$PROFILE" --batch 128 --forecast 128,100
  assert_morph_error "--forecast" "no allocation runs all 2 forecast batches"
  morph hetero --profile "$PROFILE" --batch 128 --forecast 128,-5
  assert_morph_error "--forecast" "-5"
  morph hetero --profile "$PROFILE" --batch 128 --interval 0
  assert_morph_error "--interval" "0"
  morph hetero --profile "$PROFILE" --batch 128 --cost-slack -1
  assert_morph_error "--cost-slack"
  morph hetero --profile "$PROFILE" --batch 128 --forecast "$(seq -s, 4097 | sed 's/[0-9]\+/128/g')"
  assert_morph_error "--forecast" "4097 steps, more than 4096"
  # Each of these batches alone is searched in seconds; eight of them are refused at once.
  local big
  big=$(for i in $(seq 0 7); do echo $((67108864 - 64 * i)); done | paste -sd,)
  morph hetero --profile "$PROFILE" --batch 128 --forecast "$big"
  assert_morph_error "--forecast" "distinct batches" "more than 134217728 steps"
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
