#!/usr/bin/env bats
# morph status, explain and models on a state database as morphd leaves it
# (make_state_db.cc): the alternatives of each decision, the status of each job with its
# SLA state, and each model's parameters with what its jobs measured against them.
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

@test "a time beyond the calendar (a damaged database) is printed as a number, not a crash" {
  local damaged="$BATS_TEST_TMPDIR/damaged.db"
  cp "$STATE_DB" "$damaged"
  /usr/bin/python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE decisions SET time = 100000000000000000 WHERE job_id = 101"); c.commit()' "$damaged"
  morph explain 101 --state "$damaged"
  assert_ok
  [[ $output == "100000000000000000 (Unix time)  start "* ]] || { show_run; fail "the time was not printed as a number"; }
  morph status --state "$damaged"
  assert_ok
  grep -qE '^101 .* 100000000000000000 \(Unix time\) start$' <<<"$output" || { show_run; fail "no row for job 101"; }
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

@test "models lists each model's parameters and what its jobs measured, leaving out what morph.conf lacks" {
  morph models --state "$STATE_DB"
  [ "$status" -eq 0 ] || { show_run; fail "morph models failed"; }
  grep -qE '^gpt2-1.5b +online refit +[0-9-]+ [0-9:]+ +0\.0200 +2 +3 ' <<<"$output" || { show_run; fail "no gpt2 row"; }
  grep -qE '^bert-336m +FLOP estimate +- +- +1 +1 ' <<<"$output" || { show_run; fail "no bert row"; }
  # Jobs 103 and 104 ran one configuration: the median of their times.
  grep -qE '^gpt2-1.5b b16 dp=4 .* on 4xa100-80g \(16 CPUs per GPU\) +2 +0\.420 ' <<<"$output" ||
    { show_run; fail "no row for the 4-GPU configuration"; }
  [[ $stderr == *"refit point of job 106"*"left out: node type no-such-node is not one of morph.conf"* ]] ||
    { show_run; fail "job 106's point was not said to be left out"; }
}

@test "models --json predicts each configuration as morph plan does, with the refit's parameters" {
  require_jq
  morph --json models --state "$STATE_DB"
  assert_ok
  local file bert_plan plan_ms
  file=$(save_json models)
  jq_true "$file" '[.models[].model] == ["bert-336m", "gpt2-1.5b"]'
  jq_true "$file" '.models[1] | .parameters == "online refit" and .params.k_dp == 3 and .fitted_at == 1030 and .jobs == 3'
  jq_true "$file" '.models[0] | .parameters == "FLOP estimate" and .fitted_at == null and .params.k_dp == 1'
  jq_true "$file" '[.models[].configurations[] | ((.predicted_s - .measured_s) / .measured_s - .error) | fabs < 1e-12] | all'
  jq_true "$file" '.models[] | .mean_error - ([.configurations[].error | fabs] | add / length) | fabs < 1e-12'
  jq_true "$file" '(.left_out | length) == 1 and (.left_out[0] | contains("job 106"))'
  # bert-336m has no refit: its prediction is morph plan's for the same plan and GPUs.
  bert_plan=$(jq -r '.models[0].configurations[0].configuration' "$file")
  [[ $bert_plan == *"dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=8 on 8xa100-80g"* ]] || fail "$bert_plan"
  morph --json plan --model bert-336m --batch 64 --gpus 8xa100 --cpus-per-gpu 16 --all
  assert_ok
  plan_ms=$(jq '.feasible[] | select(.plan.text == "dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=8") | .time_ms.iteration' <<<"$output")
  [ -n "$plan_ms" ] || fail "morph plan does not list the plan"
  jq_true "$file" '(.models[0].configurations[0].predicted_s * 1000 - $ms) | fabs < 1e-9' --argjson ms "$plan_ms"
  # gpt2-1.5b's refit (gradient synchronisation 3x slower) predicts its 8-GPU run slower
  # than morph plan's default parameters do.
  morph --json plan --model gpt2-1.5b --batch 16 --gpus 8xa100 --cpus-per-gpu 16 --all
  assert_ok
  plan_ms=$(jq '.feasible[] | select(.plan.text == "dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=2") | .time_ms.iteration' <<<"$output")
  [ -n "$plan_ms" ] || fail "morph plan does not list gpt2's plan"
  morph --json models --state "$STATE_DB" --model gpt2
  assert_ok
  jq -e '[.models[].model] == ["gpt2-1.5b"] and .left_out == []' <<<"$output" >/dev/null ||
    fail "--model gpt2 kept other models: $output"
  jq -e --argjson ms "$plan_ms" '.models[0].configurations[] | select(.configuration | contains("dp=8 ")) |
    .predicted_s * 1000 > $ms * 1.05' <<<"$output" >/dev/null || fail "the refit's parameters were not used: $output"
}

@test "a state database that does not exist is named, not created" {
  local missing="$BATS_TEST_TMPDIR/missing.db"
  morph status --state "$missing"
  assert_morph_error "$missing: --state: no such state database"
  morph models --state "$missing"
  assert_morph_error "$missing: --state: no such state database"
  [ ! -e "$missing" ] || fail "morph created $missing"
}

@test "a database of an older schema is refused, not migrated: the reading commands never write" {
  local old="$BATS_TEST_TMPDIR/old.db"
  cp "$STATE_DB" "$old"
  /usr/bin/python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA user_version = 2"); c.commit()' "$old"
  local before
  before=$(sha256sum <"$old")
  morph status --state "$old"
  assert_morph_error "$old: the state database has schema version 2, older than this Morph's 7"
  morph models --state "$old"
  assert_morph_error "older than this Morph's 7"
  [ "$(sha256sum <"$old")" = "$before" ] || fail "morph changed $old"
}

@test "morphd refuses a state database another morphd holds, before it reads Slurm" {
  local morphd="$MORPH_BUILDDIR/daemon/morphd"
  [ -x "$morphd" ] || skip "morphd was not built (configure found no Slurm, SQLite or MUNGE)"
  [ "$(id -u)" -eq 0 ] || skip "morphd runs as root or SlurmUser"
  command -v flock >/dev/null || skip "no flock(1)"
  local db="$BATS_TEST_TMPDIR/held.db"
  cp "$STATE_DB" "$db"
  printf '4242\n' >"$db.lock"
  run timeout 20 flock -n "$db.lock" "$morphd" -D --once --dry-run --config "$MORPH_CONF" --state "$db"
  [ "$status" -eq 1 ] || fail "morphd ran beside the holder: $output"
  [[ $output == *"$db: morphd (pid 4242) runs on this state database ($db.lock is locked): stop it, or give this morphd a database of its own (--state)"* ]] || fail "$output"
}

@test "morphd started as a daemon fails where it was started when it cannot start (it exited 0, the error in syslog)" {
  local morphd="$MORPH_BUILDDIR/daemon/morphd"
  [ -x "$morphd" ] || skip "morphd was not built (configure found no Slurm, SQLite or MUNGE)"
  [ "$(id -u)" -eq 0 ] || skip "morphd runs as root or SlurmUser"
  run --separate-stderr timeout 20 "$morphd" --config "$BATS_TEST_TMPDIR/none.conf"
  [ "$status" -eq 1 ] || fail "status $status: $stderr"
  [[ $stderr == *"configuration: $BATS_TEST_TMPDIR/none.conf: no such file"* ]] || fail "$stderr"
  run timeout 20 "$morphd" --poll 0
  [ "$status" -eq 1 ] || fail "a bad option: status $status: $output"
  # Without slurm.conf it says so at once (libslurm retried for a minute).
  SLURM_CONF="$BATS_TEST_TMPDIR/no-slurm.conf" run --separate-stderr timeout 20 "$morphd" -D --once \
    --config "$MORPH_CONF" --state "$BATS_TEST_TMPDIR/fresh.db"
  [ "$status" -eq 1 ] || fail "status $status: $stderr"
  [[ $stderr == *"$BATS_TEST_TMPDIR/no-slurm.conf: no slurm.conf (SLURM_CONF or the installed one)"* ]] || fail "$stderr"
  if command -v flock >/dev/null; then
    local db="$BATS_TEST_TMPDIR/held.db"
    cp "$STATE_DB" "$db"
    run --separate-stderr timeout 20 flock -n "$db.lock" "$morphd" --dry-run --config "$MORPH_CONF" --state "$db"
    [ "$status" -eq 1 ] || fail "status $status: $stderr"
    [[ $stderr == *"runs on this state database"* ]] || fail "$stderr"
  fi
}

@test "morphd --once exits 1 when slurmctld does not answer, rather than trying for ever" {
  local morphd="$MORPH_BUILDDIR/daemon/morphd"
  [ -x "$morphd" ] || skip "morphd was not built (configure found no Slurm, SQLite or MUNGE)"
  [ "$(id -u)" -eq 0 ] || skip "morphd runs as root or SlurmUser"
  # A cluster whose slurmctld is nowhere: nothing listens on the port.
  printf 'ClusterName=nowhere\nSlurmctldHost=localhost\nSlurmctldPort=1\nAuthType=auth/munge\nMessageTimeout=2\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1 Default=YES\n' \
    >"$BATS_TEST_TMPDIR/nowhere.conf"
  { cat "$MORPH_CONF"; echo "ModelCatalog=$MORPH_CATALOG"; } >"$BATS_TEST_TMPDIR/morph.conf"
  SLURM_CONF="$BATS_TEST_TMPDIR/nowhere.conf" run --separate-stderr timeout 60 "$morphd" -D --once --dry-run \
    --config "$BATS_TEST_TMPDIR/morph.conf" --state "$BATS_TEST_TMPDIR/once.db"
  [ "$status" -eq 1 ] || fail "status $status (124: still trying after 60 s): $stderr"
  [[ $stderr == *"slurmctld did not answer: "* ]] || fail "$stderr"
  [[ $stderr != *"trying again"*"trying again"* ]] || fail "tried more than once: $stderr"
}

@test "forget drops a model's online refits and points, the other models' stay; never beside morphd" {
  require_jq
  local db="$BATS_TEST_TMPDIR/forget.db"
  cp "$STATE_DB" "$db"
  if command -v flock >/dev/null; then
    run --separate-stderr flock -n "$db.lock" "$MORPH" forget --model gpt2 --state "$db"
    assert_morph_error "$db: morphd (pid unknown) runs on this state database ($db.lock is locked): stop morphd first"
    morph --json models --state "$db" --model gpt2
    jq -e '.models[0] | .parameters == "online refit" and .jobs == 3' <<<"$output" >/dev/null || fail "forgot beside morphd: $output"
  fi
  morph forget --model gpt2 --state "$db"
  assert_ok
  [[ $output == "$db: forgot 1 online refit and 3 refit points of gpt2-1.5b;"* ]] || fail "$output"
  morph --json models --state "$db"
  assert_ok
  jq -e '[.models[].model] == ["bert-336m"] and .models[0].jobs == 1' <<<"$output" >/dev/null ||
    fail "gpt2 was not forgotten, or bert was: $output"
  morph forget --model gpt2-1.5b --state "$db"
  assert_ok
  [ "$output" = "$db: morphd had learnt nothing about gpt2-1.5b online" ] || fail "$output"
  morph forget --model no-such-model --state "$db"
  assert_morph_error "no-such-model"
  # A model the catalog no longer has is forgotten by its full name, not its alias.
  jq '.models |= map(select(.name != "bert-336m"))' "$MORPH_CATALOG" >"$BATS_TEST_TMPDIR/catalog.json"
  MORPH_CATALOG="$BATS_TEST_TMPDIR/catalog.json" morph forget --model bert --state "$db"
  assert_morph_error "bert"
  MORPH_CATALOG="$BATS_TEST_TMPDIR/catalog.json" morph forget --model bert-336m --state "$db"
  assert_ok
  [[ $output == "$db: forgot "*" of bert-336m;"* ]] || fail "$output"
  morph --json models --state "$db"
  jq -e '.models == []' <<<"$output" >/dev/null || fail "bert was not forgotten: $output"
  morph forget --model bert --state "$BATS_TEST_TMPDIR/missing.db"
  assert_morph_error "missing.db: --state: no such state database"
  [ ! -e "$BATS_TEST_TMPDIR/missing.db" ] || fail "forget created the database"
  # A mistyped --state naming another file is refused and left as it was.
  : >"$BATS_TEST_TMPDIR/other.db"
  chmod 600 "$BATS_TEST_TMPDIR/other.db"
  morph forget --model bert --state "$BATS_TEST_TMPDIR/other.db"
  assert_morph_error "other.db: no state database morphd has written (schema version 0"
  [ ! -s "$BATS_TEST_TMPDIR/other.db" ] || fail "forget wrote Morph's schema into another file"
}

@test "models names an unknown model" {
  morph models --state "$STATE_DB" --model no-such-model
  assert_morph_error "no-such-model"
}
