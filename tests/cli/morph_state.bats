#!/usr/bin/env bats
# morph status and explain on a state database as morphd leaves it (make_state_db.cc):
# the alternatives of each decision, and the status of each job with its SLA state.
# Environment and helpers: common.bash.

bats_require_minimum_version 1.5.0
load common

setup_file() {
  : "${MORPH_BUILDDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/build}"
  export STATE_DB="$BATS_FILE_TMPDIR/morph.db"
  "$MORPH_BUILDDIR/tests/cli/make_state_db" "$STATE_DB"
}

@test "explain prints each decision with the configurations that lost and why" {
  morph explain 101 --state "$STATE_DB"
  assert_ok
  [[ $output == *"start"*"1 node x 8 a100-80g GPUs"* ]] || { show_run; fail "no start decision"; }
  local chosen lost infeasible
  chosen=$(grep -E '^ +8 a100-80g +dp=8 .* 160\.00 .* chosen$' <<<"$output") || { show_run; fail "no chosen row"; }
  lost=$(grep -E '^ +16 a100-80g +dp=16 .* 266\.70 .* needs 16 GPUs, 8 free$' <<<"$output") ||
    { show_run; fail "no row for 16 GPUs"; }
  infeasible=$(grep -E '^ +8 v100-32g +- +- +- +no plan fits$' <<<"$output") || { show_run; fail "no v100 row"; }
  [ -n "$chosen" ] && [ -n "$lost" ] && [ -n "$infeasible" ]
}

@test "explain --json keeps the alternatives with their outcomes" {
  require_jq
  morph --json explain 101 --state "$STATE_DB"
  assert_ok
  local file
  file=$(save_json explain)
  jq_true "$file" '.job == 101 and (.decisions | length) == 1'
  jq_true "$file" '[.decisions[0].alternatives[].outcome] == ["chosen", "no_room", "infeasible"]'
  jq_true "$file" '.decisions[0].alternatives[1] | .gpus == 16 and .samples_per_s > 266 and .why == "needs 16 GPUs, 8 free"'
}

@test "explain says why a job waits" {
  morph explain 102 --state "$STATE_DB"
  assert_ok
  [[ $output == *"wait "*"wait: its best configuration, 4 x a100-80g, needs more GPUs than are free"* ]] ||
    { show_run; fail "no wait reason"; }
  [[ $output == *"needs 4 GPUs, 0 free"* ]] || { show_run; fail "no alternative"; }
}

@test "explain of a job morphd never decided on fails naming the job" {
  morph explain 999 --state "$STATE_DB"
  assert_morph_error "no decision on job 999"
}

@test "status --json gives each job its plan, GPUs, predicted and observed speed, SLA state and last decision" {
  require_jq
  morph --json status --state "$STATE_DB"
  assert_ok
  local file
  file=$(save_json status)
  jq_true "$file" '(.jobs | length) == 2'
  jq_true "$file" '.jobs[0] | .job == 101 and .gpus == 8 and .gpu_type == "a100-80g" and (.plan | startswith("dp=8 "))'
  jq_true "$file" '.jobs[0] | .predicted_samples_per_s == 160 and .observed_samples_per_s == 64'
  jq_true "$file" '.jobs[0] | .sla == "guaranteed" and .sla_state == "below promise" and .promised_samples_per_s == 80'
  jq_true "$file" '.jobs[0].last_decision | .action == "start" and .time == 1010'
  jq_true "$file" '.jobs[1] | .job == 102 and .gpus == 0 and .observed_samples_per_s == null'
  jq_true "$file" '.jobs[1] | .sla_state == "best-effort" and .last_decision.action == "wait"'
}

@test "status prints the SLA state in its table" {
  morph status --state "$STATE_DB"
  assert_ok
  grep -qE '^101 +gpt2-1.5b +guaranteed +8 a100-80g .* 160\.00 +64\.00 +below promise ' <<<"$output" ||
    { show_run; fail "no row for job 101"; }
}
