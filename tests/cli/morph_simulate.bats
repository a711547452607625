#!/usr/bin/env bats
# morph simulate: the Morphling artifact's workloads replayed under every policy, the
# output formats and bad input (Table 4's claims on whole workloads: morph_workloads.bats).
# Environment and helpers: common.bash.

# shellcheck disable=SC2016  # jq filters are single-quoted on purpose

bats_require_minimum_version 1.5.0
load common

# last_field NAME: the value of NAME= on the last line of $output.
last_field() {
  printf '%s\n' "$output" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# A workload file in the scratch folder with the artifact's header and the given rows.
write_workload() {
  local file="$BATS_TEST_TMPDIR/w.csv"
  printf 'name,submission_time,duration,application,num_gpus,num_cpus,bandwidth,exec_plan,steps,is_sla\n' >"$file"
  printf '%s\n' "$@" >>"$file"
  echo "$file"
}

@test "simulate: morphling on workload-base ends with the policy line and beats the artifact's 3638 s" {
  require_artifact
  morph simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --policy morphling
  assert_ok
  [[ "$(printf '%s\n' "$output" | tail -n 1)" =~ ^policy=morphling\ avg_jct_s=[0-9.]+\ p99_jct_s=[0-9.]+\ makespan_s=[0-9.]+$ ]] ||
    fail "bad last line" "$output"
  local avg
  avg=$(last_field avg_jct_s)
  awk -v a="$avg" 'BEGIN { exit !(a > 0 && a < 3638) }' || fail "average JCT $avg s is not below 3638 s"
  [[ "$output" == *"406  406"* ]] || fail "not every job finished" "$output"
}

@test "simulate --measured-only: (nearly) every speed is measured and morphling still leads" {
  require_artifact
  require_jq
  morph --json simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --policy morphling --measured-only
  assert_ok
  local file
  file=$(save_json measured)
  # Requested plans stay allowed where the traces lack them, so some runs are predicted
  # (fifo, which runs only requests, spends 3.7% of its running time at such speeds).
  jq_true "$file" '.policies[0].predicted_share < 0.05 and .policies[0].all.finished == 406'
  jq_true "$file" '.policies[0].all.avg_jct_s < 3638'
}

@test "simulate waits what morphd waits before a job grows again: the restart penalty, unless --payback says" {
  require_artifact
  require_jq
  local file
  morph --json simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --policy morphling --restart-penalty 100
  assert_ok
  file=$(save_json penalty)
  jq_true "$file" '.payback_s == 100 and .restart_s.requeue == 100'
  morph --json simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --policy morphling --payback 0
  assert_ok
  file=$(save_json artifact)
  jq_true "$file" '.payback_s == 0 and .restart_s.requeue == 260'
}

@test "simulate backs off restarting a job as morphd does, unless RestartBackoff=no or --restart-backoff no" {
  require_artifact
  require_jq
  local policy flag conf="$BATS_TEST_TMPDIR/morph.conf"
  for policy in morphling sia; do
    for flag in yes no; do
      morph --json simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --policy $policy \
        --measured-only --job-length exact --restart-backoff $flag
      assert_ok
      save_json "$policy-$flag" > /dev/null
    done
  done
  local t="$BATS_TEST_TMPDIR"
  jq_true "$t/morphling-yes.json" '.restart_backoff == true'
  jq_true "$t/morphling-no.json" '.restart_backoff == false'
  # Fewer restarts per job under morphling; sia has no backoff and runs the same.
  jq_true "$t/morphling-yes.json" '.policies[0].all.restarts_per_job < $no[0].policies[0].all.restarts_per_job' \
    --slurpfile no "$t/morphling-no.json"
  jq_true "$t/sia-yes.json" '(.policies[0] | del(.wall_s)) == ($no[0].policies[0] | del(.wall_s))' \
    --slurpfile no "$t/sia-no.json"
  # morph.conf's RestartBackoff=no is the default of --restart-backoff.
  sed 's/^RestartBackoff=.*//' "$MORPH_CONF" > "$conf"
  echo "RestartBackoff=no" >> "$conf"
  MORPH_CONF=$conf morph --json simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" \
    --policy morphling --measured-only --job-length exact
  assert_ok
  jq_true "$(save_json conf)" '(.policies[0] | del(.wall_s)) == ($no[0].policies[0] | del(.wall_s))' \
    --slurpfile no "$t/morphling-no.json"
  MORPH_CONF=$conf morph simulate --workload "$(workload base)" --policy morphling
  assert_ok
  [[ $output == *"restart backoff: none"* ]] || fail "no line says the backoff is off" "$output"
}

@test "simulate refits the policies' models as morphd does: at RefitErrorThreshold unless --refit-threshold says" {
  require_artifact
  require_jq
  local file
  morph --json simulate --workload "$(workload mt)" --truth "$ARTIFACT/traces" --policy morphling --measured-only
  assert_ok
  file=$(save_json refit)
  jq_true "$file" '.refit_threshold == 0.1 and .policies[0].refits > 0'
  jq_true "$file" '.policies[0].refits_kept > 0 and .policies[0].refits_kept <= .policies[0].refits'
  jq_true "$file" '.policies[0].all.finished == 406'
  morph --json simulate --workload "$(workload mt)" --truth "$ARTIFACT/traces" --policy morphling --measured-only \
    --refit-threshold 0
  assert_ok
  file=$(save_json none)
  jq_true "$file" '.refit_threshold == 0 and .policies[0].refits == 0 and .policies[0].refits_kept == 0'
  morph simulate --workload "$(workload mt)" --truth "$ARTIFACT/traces" --policy fifo --refit-threshold 0.25
  assert_ok
  [[ "$output" == *"online refit: the policy's models are refitted when they mispredict their jobs by more than 25%"* ]] ||
    fail "no refit line" "$output"
  [[ "$output" == *"online refits ("*" kept)"* ]] || fail "no refit count" "$output"
  morph simulate --workload "$(workload mt)" --refit-threshold -1
  assert_morph_error --refit-threshold
}

@test "simulate --world-model in-sample: the speeds the traces lack come from models no policy sees" {
  require_artifact
  require_jq
  local file
  morph --json simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --policy morphling \
    --world-model in-sample
  assert_ok
  file=$(save_json world)
  jq_true "$file" '.world_model == "in-sample" and (.world_models.vit | test("every trace row"))'
  jq_true "$file" '.models.vit | test("3 trace rows")'
  jq_true "$file" '.policies[0].all.finished == 406 and .policies[0].predicted_share > 0.5'
  morph simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --policy fifo --world-model in-sample
  assert_ok
  [[ "$output" == *"models fitted on every trace row (which no policy sees) elsewhere"* ]] || fail "no world line" "$output"
  morph simulate --workload "$(workload base)" --policy fifo --world-model in-sample
  assert_morph_error --world-model --truth
  morph simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --world-model measured
  assert_morph_error --world-model
}

@test "simulate --json and --jobs-csv report every job" {
  require_artifact
  require_jq
  local csv="$BATS_TEST_TMPDIR/jobs.csv"
  morph --json simulate --workload "$(workload mt)" --truth "$ARTIFACT/traces" --policy sia --jobs-csv "$csv"
  assert_ok
  local file
  file=$(save_json sim)
  jq_true "$file" '.jobs == 406 and .gpus == 64 and .restart_s == {start: 260, inplace: 260, shrink: 260, requeue: 260} and .interval_s == 60 and .payback_s == 260'
  jq_true "$file" '.policies | length == 1 and .[0].policy == "sia"'
  jq_true "$file" '.policies[0].guaranteed.jobs + .policies[0].best_effort.jobs == 406'
  jq_true "$file" '.policies[0].guaranteed.jobs > 0 and .policies[0].makespan_s > 0'
  # A JCT is the first wait, progress, and the restarts and time without GPUs after it.
  jq_true "$file" '[.policies[0] | .all, .guaranteed, .best_effort | .avg_progress_s > 0 and
                    .avg_progress_s <= .avg_jct_s - .avg_queue_s] | all'
  [ "$(wc -l <"$csv")" -eq 407 ] || fail "jobs.csv: expected a header and 406 rows"
  head -n 1 "$csv" | grep -q '^policy,name,guaranteed,gpus,submit_s,first_start_s,end_s,jct_s,.*,run_s$' || fail "bad header"
  # A finished job's time making progress lies within its time from its first start to its end.
  awk -F, 'NR > 1 && !($14 > 0 && $14 <= $7 - $6 + 0.1) { print; bad = 1 } END { exit bad }' "$csv" ||
    fail "run_s outside a job's time after its first start"
  # Review of the command: a path it cannot write failed only after the whole simulation.
  morph simulate --workload "$(workload mt)" --truth "$ARTIFACT/traces" --policy all --jobs-csv "$BATS_TEST_TMPDIR/no/such/dir/jobs.csv"
  assert_morph_error --jobs-csv "cannot write"  # and nothing on stdout: no table was printed
}

@test "simulate without --truth runs on the model and says so" {
  require_artifact
  morph simulate --workload "$(workload base)" --policy fifo --cluster 8x8xa800
  assert_ok
  [[ "$output" == *"speeds: the performance model"* ]] || fail "no model note" "$output"
  [[ "$output" == *"on 8x8xa800 (64 GPUs)"* ]] || fail "cluster not echoed" "$output"
  [[ "$(printf '%s\n' "$output" | tail -n 1)" == policy=fifo* ]] || fail "bad last line" "$output"
}

@test "simulate: jobs larger than the cluster are reported, the others finish" {
  require_artifact
  morph simulate --workload "$(workload base)" --policy fifo --cluster 4x8xa800
  [ "$status" -eq 0 ] || fail "exit status $status"
  [[ "$stderr" == *"under fifo, "*" job(s) never finished"* ]] || fail "no warning" "$stderr"
  # No makespan while a job never ends (it was the last completion's, 0.0 when none ended).
  [[ "$(printf '%s\n' "$output" | tail -n 1)" =~ ^policy=fifo\ .*\ makespan_s=none$ ]] || fail "bad last line" "$output"
  [[ "$output" == *"no makespan: "*" job(s) never finished"* ]] || fail "a makespan was printed" "$output"
  # Nor in JSON: null, not the last completion's time.
  if command -v jq >/dev/null; then
    morph --json simulate --workload "$(workload base)" --policy fifo --cluster 4x8xa800
    [ "$status" -eq 0 ] || fail "exit status $status"
    jq -e '.policies[0] | (.never_finished | length) > 0 and .makespan_s == null' <<<"$output" >/dev/null ||
      fail "--json gave a makespan" "$(jq -c '.policies[0] | {makespan_s, never_finished}' <<<"$output")"
  fi
}

@test "simulate: a class of jobs none of which finished has no JCT, not 0 s, and no ratio" {
  require_artifact
  # A guaranteed job of 128 GPUs on 64 never runs; the small one finishes.
  morph simulate --workload "$(write_workload big,0,100,vit,128,16,0,p2t1d64,100,1 small,10,100,bert,2,16,0,ga,100,0)" \
    --truth "$ARTIFACT/traces" --policy all
  [ "$status" -eq 0 ] || fail "exit status $status" "$output"
  local fifo
  fifo=$(grep -E '^fifo ' <<<"$output")
  # policy, avg JCT h (ratio), P99 JCT h (ratio), guar. avg h: "-", with no "(0.00x)"
  [ "$(awk '{ print $6 }' <<<"$fifo")" = "-" ] || fail "guaranteed JCT of fifo: $fifo" "$output"
  [[ "$output" != *"0.00 (0.00x)"* ]] || fail "a 0 s JCT or its ratio was printed" "$output"
  if command -v jq >/dev/null; then
    morph --json simulate --workload "$BATS_TEST_TMPDIR/w.csv" --truth "$ARTIFACT/traces" --policy fifo
    jq -e '.policies[0].guaranteed | .finished == 0 and .avg_jct_s == null and .p99_jct_s == null' <<<"$output" \
      >/dev/null || fail "--json gave a JCT" "$(jq -c '.policies[0].guaranteed' <<<"$output")"
    jq -e '.policies[0].best_effort | .finished == 1 and .avg_jct_s > 0' <<<"$output" >/dev/null ||
      fail "the small job" "$(jq -c '.policies[0].best_effort' <<<"$output")"
  fi
}

@test "simulate --truth with a trailing slash finds the profiles beside it, as without" {
  require_artifact
  require_jq
  local w
  w=$(write_workload small,10,100,bert,2,16,0,ga,100,0)
  morph --json simulate --workload "$w" --truth "$ARTIFACT/traces/" --policy fifo
  assert_ok
  jq -e '.models.bert | startswith("fitted on")' <<<"$output" >/dev/null ||
    fail "not fitted: $(jq -c .models <<<"$output")"
}

@test "simulate: a restart penalty of zero cannot make morphling slower" {
  require_artifact
  morph simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --restart-penalty 0
  assert_ok
  local free
  free=$(last_field avg_jct_s)
  morph simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --restart-penalty 600
  assert_ok
  awk -v a="$free" -v b="$(last_field avg_jct_s)" 'BEGIN { exit !(a < b) }' || fail "$free s is not below the 600 s penalty's"
}

@test "simulate --restart-costs: cheaper requeues cannot make morphling slower; the output names each path" {
  require_artifact
  morph simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --restart-penalty 260
  assert_ok
  local uniform
  uniform=$(last_field avg_jct_s)
  morph simulate --workload "$(workload base)" --truth "$ARTIFACT/traces" --restart-penalty 260 --restart-costs requeue=20,start=10
  assert_ok
  [[ $output == *"restart penalty start 10 s, in place 260 s, shrink 260 s, requeue 20 s"* ]] || fail "$output"
  awk -v a="$(last_field avg_jct_s)" -v b="$uniform" 'BEGIN { exit !(a < b) }' || fail "not below the uniform $uniform s"
}

@test "simulate: a heterogeneous cluster runs every policy on a small workload" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,1" "b,30,100,vit,1,8,0,zero-dp,500,0" "c,60,100,gpt2,8,64,0,ga,50,0")
  morph simulate --workload "$w" --cluster 1x8xa800+2x8xv100 --policy all
  assert_ok
  [ "$(printf '%s\n' "$output" | grep -c '^policy=')" -eq 8 ] || fail "expected 8 policy lines" "$output"
}

@test "simulate: a lone job of 1e12 steps ends in seconds, its JCT 1e6 times that of 1e6 steps (issue 10)" {
  # Every policy once decided a round per simulated minute: 1e12 steps of bert took hours.
  local w lines_small lines_big
  w=$(write_workload "a,0,100,bert,2,16,0,ga,1000000,0")
  morph simulate --workload "$w" --policy all
  assert_ok
  lines_small=$(printf '%s\n' "$output" | grep '^policy=')
  w=$(write_workload "a,0,100,bert,2,16,0,ga,1000000000000,0")
  run --separate-stderr timeout 20 "$MORPH" simulate --workload "$w" --policy all
  assert_ok
  lines_big=$(printf '%s\n' "$output" | grep '^policy=')
  [ "$(printf '%s\n' "$lines_big" | wc -l)" -eq 8 ] || fail "expected 8 policy lines" "$output"
  # Submitted at 0, the job starts in the first round and pays one restart penalty (260 s).
  paste -d ' ' <(printf '%s\n' "$lines_small") <(printf '%s\n' "$lines_big") |
    sed 's/policy=\([^ ]*\) avg_jct_s=\([0-9.]*\) .*policy=\([^ ]*\) avg_jct_s=\([0-9.]*\) .*/\1 \2 \3 \4/' |
    awk '{ r = ($4 - 260) / ($2 - 260); if ($1 != $3 || r < 1e6 * (1 - 1e-5) || r > 1e6 * (1 + 1e-5)) { print; bad = 1 } }
         END { exit bad }' || fail "JCT does not scale with the steps" "$lines_small" "$lines_big"
}

@test "simulate --job-length: every mode finishes every job; the default is declared and the output says so" {
  local w mode
  w=$(write_workload "a,0,100,bert,2,16,0,ga,1000,0" "b,30,5000,bert,4,32,0,ga,90000,0" "c,60,10,gpt2,2,16,0,ga,50,0")
  for mode in exact declared unknown; do
    morph simulate --workload "$w" --policy all --job-length "$mode"
    assert_ok
    [[ "$output" == *"job lengths: $mode;"* ]] || fail "$mode: not reported" "$output"
    [ "$(printf '%s\n' "$output" | grep -c '^policy=')" -eq 8 ] || fail "$mode: expected 8 policy lines" "$output"
    [[ "$stderr" != *"never finished"* ]] || fail "$mode: a job never finished" "$stderr"
  done
  morph simulate --workload "$w"
  assert_ok
  [[ "$output" == *"job lengths: declared; a job waiting 28800 s is overdue"* ]] || fail "default not reported" "$output"
}

@test "bad input: simulate --job-length and --starvation-limit name the option" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,0")
  morph simulate --workload "$w" --job-length guess
  assert_morph_error --job-length guess
  morph simulate --workload "$w" --starvation-limit -5
  assert_morph_error --starvation-limit
  morph simulate --workload "$w" --restart-costs grow=5
  assert_morph_error --restart-costs grow
}

@test "bad input: simulate with a malformed row names the file and line" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,0" "b,never,100,bert,2,16,0,ga,100,0")
  morph simulate --workload "$w"
  assert_morph_error "$w:3" submission_time
}

@test "bad input: simulate with a missing column names it" {
  local w="$BATS_TEST_TMPDIR/w.csv"
  printf 'name,submission_time\nx,1\n' >"$w"
  morph simulate --workload "$w"
  assert_morph_error "$w" duration
}

@test "bad input: simulate with an unknown application names the file, line and application" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,0" "b,1,100,resnet,2,16,0,ga,100,0")
  morph simulate --workload "$w"
  assert_morph_error "$w:3" "unknown application 'resnet'"
}

@test "bad input: simulate with a plan that does not fit its GPUs names the row" {
  local w
  w=$(write_workload "a,0,100,llama30,8,64,0,344,100,0")
  morph simulate --workload "$w"
  assert_morph_error "$w:2"
}

@test "bad input: simulate on a zero-GPU cluster" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,0")
  morph simulate --workload "$w" --cluster 8x0xa800
  assert_morph_error --cluster 8x0xa800
}

@test "bad input: simulate with an unknown policy lists the known ones" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,0")
  morph simulate --workload "$w" --policy tiresias
  assert_morph_error tiresias morphling sia
}

@test "bad input: simulate --measured-only without --truth" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,0")
  morph simulate --workload "$w" --measured-only
  assert_morph_error --measured-only --truth
}

@test "bad input: simulate --truth that is not a folder, a workload that does not exist, a bad quota" {
  local w
  w=$(write_workload "a,0,100,bert,2,16,0,ga,100,0")
  morph simulate --workload "$w" --truth "$w"
  assert_morph_error --truth "$w"
  morph simulate --workload "$BATS_TEST_TMPDIR/none.csv"
  assert_morph_error "$BATS_TEST_TMPDIR/none.csv"
  morph simulate --workload "$w" --quota alice=many
  assert_morph_error --quota alice
}
