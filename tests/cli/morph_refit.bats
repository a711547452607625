#!/usr/bin/env bats
# morph fit --warm-start: refitting a saved model to observed iteration times (Morphling
# §4), end to end, and how bad input is reported. The saved model comes from a small
# synthetic profile that each test writes, so nothing here needs the artifact.
# Environment and helpers: common.bash.

# shellcheck disable=SC2016  # jq filters are single-quoted on purpose

bats_require_minimum_version 1.5.0
load common

# A synthetic profile in the artifact's format, in a folder named bert so that the artifact
# description supplies the model (bert-336m) and the global batch (256). DP runs and
# ZeRO-Offload runs on 2, 4 and 8 A800s of one node.
write_profile() {
  local dir="$BATS_TEST_TMPDIR/profiles/bert"
  mkdir -p "$dir"
  cat >"$dir/config.csv" <<'CSV'
nodes,gpus,parameter_size,batch_size,seq_hid,num_cpu_threads,zero_type,is_tp,is_pp
1,8,330,1,12582912,1,0,0,0
1,4,330,1,12582912,1,0,0,0
1,2,330,1,12582912,1,0,0,0
1,8,330,1,12582912,4,1,0,0
1,4,330,1,12582912,4,1,0,0
1,2,330,1,12582912,4,1,0,0
CSV
  cat >"$dir/data.csv" <<'CSV'
forward_time,Tcc,Topt,iter_time,strategy
42,85,26,160,1100
66,132,25,230,1100
118,222,26,370,1100
40,125,120,290,1111
64,160,150,380,1111
119,260,200,590,1111
CSV
  echo "$dir"
}

# The model fitted on write_profile's runs, saved as JSON; prints its path.
saved_model() {
  local file="$BATS_TEST_TMPDIR/bert.json"
  run --separate-stderr "$MORPH" fit --profile "$(write_profile)" --save "$file"
  [ "$status" -eq 0 ] || { show_run; fail "morph fit --profile failed"; }
  echo "$file"
}

# Observed iterations of bert-336m (global batch 256) that run a third slower than the
# profile said: a slower data loader, say.
write_points() {
  local file="$BATS_TEST_TMPDIR/points.csv"
  cat >"$file" <<'CSV'
plan,gpus,iter_ms,cpus_per_gpu
dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=32,8xa800,215,
dp=4 tp=1 pp=1 zero=0 offload=0 gc=0 ga=2 mb=1 mbs=32,4xa800,305,
dp=2 tp=1 pp=1 zero=1 offload=1 gc=0 ga=4 mb=1 mbs=32,2xa800,780,4
CSV
  echo "$file"
}

# A points file with the given lines after the header.
points_with() {
  local file="$BATS_TEST_TMPDIR/bad.csv"
  printf 'plan,gpus,iter_ms,cpus_per_gpu\n' >"$file"
  printf '%s\n' "$@" >>"$file"
  echo "$file"
}

# Two refits' --json outputs give every parameter within 5% of each other (the same fit
# from another start, up to the solver's reach).
params_agree() {
  jq_true "$2" '[.params | to_entries[] | (.value.after - $first[0].params[.key].after | fabs)
                 <= 0.05 * (.value.after | fabs) + 1e-6] | all' --slurpfile first "$1"
}

GOOD_PLAN='dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=32'

@test "fit --warm-start: prints the parameters before and after and every point" {
  local model points
  model=$(saved_model)
  points=$(write_points)
  morph fit --warm-start "$model" --points "$points" --batch 256
  assert_ok
  grep -q "bert-336m with global batch 256, seq 512, refitted to 3 observed iterations" <<<"$output" \
    || { show_run; fail "no summary line"; }
  grep -qE '^parameter +before +after +unit' <<<"$output" || { show_run; fail "no parameter table"; }
  grep -qE '^k_const +' <<<"$output" || { show_run; fail "k_const is not listed"; }
  grep -qE '^point +gpus +measured +before +after +error%' <<<"$output" || { show_run; fail "no point table"; }
  local line
  for line in 2 3 4; do
    grep -qE "^$(basename "$points"):$line " <<<"${output//$BATS_TEST_TMPDIR\//}" \
      || { show_run; fail "point on line $line is not listed"; }
  done
}

@test "fit --warm-start --json: the refit moves the predictions towards the measurements" {
  require_jq
  local model points
  model=$(saved_model)
  points=$(write_points)
  morph --json fit --warm-start "$model" --points "$points" --batch 256 --prior-weight 0.3
  assert_ok
  local f
  f=$(save_json refit)
  jq_true "$f" '.model == "bert-336m" and .global_batch == 256 and .seq == 512 and .prior_weight == 0.3'
  jq_true "$f" '(.points | length) == 3 and (.params | length) >= 7'
  jq_true "$f" '[.params[] | select(.before != .after)] | length > 0'
  # Summed relative error before and after, on the observed points.
  jq_true "$f" '([.points[] | ((.predicted_after_ms - .measured_ms) / .measured_ms | fabs)] | add)
                < ([.points[] | ((.predicted_before_ms - .measured_ms) / .measured_ms | fabs)] | add)'
  jq_true "$f" '[.points[] | (.error - (.predicted_after_ms - .measured_ms) / .measured_ms | fabs) < 1e-9] | all'
}

@test "fit --warm-start --save writes a model that round-trips and differs from the start" {
  require_jq
  local model points refitted="$BATS_TEST_TMPDIR/refitted.json"
  model=$(saved_model)
  points=$(write_points)
  morph fit --warm-start "$model" --points "$points" --batch 256 --save "$refitted"
  assert_ok
  jq_true "$refitted" '.format == "morph-perf-model/1" and .model == "bert-336m"'
  # The forward model is kept, the parameters move.
  jq_true "$refitted" '.forward == $start[0].forward and .params != $start[0].params' --slurpfile start "$model"
  # The saved parameters are the "after" column, and refitting from them starts there.
  morph --json fit --warm-start "$model" --points "$points" --batch 256
  assert_ok
  local first
  first=$(save_json first)
  jq_true "$refitted" '[.params | to_entries[] | .value == $run[0].params[.key].after] | all' --slurpfile run "$first"
  morph --json fit --warm-start "$refitted" --points "$points" --batch 256
  assert_ok
  local second
  second=$(save_json second)
  jq_true "$refitted" '[.params | to_entries[] | .value == $run[0].params[.key].before] | all' --slurpfile run "$second"
  # morph plan accepts the refitted model.
  morph plan --model bert-336m --batch 256 --gpus 8xa800 --perf "$refitted"
  assert_ok
}

@test "fit --save keeps the points of the fit, and --warm-start fits them again beside the observed ones" {
  require_jq
  local model points refitted="$BATS_TEST_TMPDIR/refitted.json"
  model=$(saved_model)
  points=$(write_points)
  # The six profile runs, with what was measured and the terms that predict them.
  jq_true "$model" '(.evidence | length) == 6 and ([.evidence[] | .iter_ms > 0 and .terms.forward_ms > 0] | all)'
  jq_true "$model" '[.evidence[].iter_ms] == [160, 230, 370, 290, 380, 590]'
  jq_true "$model" '[.evidence[].terms.offload] == [false, false, false, true, true, true]'
  morph fit --warm-start "$model" --points "$points" --batch 256 --save "$refitted"
  assert_ok
  grep -q 'refitted to 3 observed iterations of .* and the 6 points it was fitted on' <<<"$output" \
    || { show_run; fail "the summary does not count the evidence"; }
  # The observed iterations are not evidence: the jobs that measured them report them again.
  jq_true "$refitted" '.evidence == $start[0].evidence' --slurpfile start "$model"
  morph --json fit --warm-start "$model" --points "$points" --batch 256
  assert_ok
  local with
  with=$(save_json with-evidence)
  jq_true "$with" '.evidence_points == 6'
  # Without its evidence the same refit fits the three observations alone and moves further
  # from the saved parameters.
  jq 'del(.evidence)' "$model" >"$BATS_TEST_TMPDIR/bare.json"
  morph --json fit --warm-start "$BATS_TEST_TMPDIR/bare.json" --points "$points" --batch 256
  assert_ok
  local without
  without=$(save_json without-evidence)
  jq_true "$without" '.evidence_points == 0'
  jq_true "$with" '[.params[] | select(.before != .after)] | length > 0'
  jq_true "$with" '.params != $bare[0].params' --slurpfile bare "$without"
}

@test "fit --warm-start --save keeps the prior of its fit: a refit of the refit counts the evidence once" {
  require_jq
  local model points refitted="$BATS_TEST_TMPDIR/refitted.json"
  model=$(saved_model)
  points=$(write_points)
  # A profile's fit has no prior; its refit has the given weight's around the profile's fit.
  jq_true "$model" 'has("prior") | not'
  morph --json fit --warm-start "$model" --points "$points" --batch 256 --save "$refitted"
  assert_ok
  local first
  first=$(save_json first)
  jq_true "$first" '.prior == "around its parameters" and .prior_weight == 0.3'
  jq_true "$refitted" '.prior.weight == 0.3 and .prior.centre == $start[0].params' --slurpfile start "$model"
  # Refitted again to the same reports (jobs report every iteration again) with
  # --prior-weight 0, which the saved prior overrides: the same fit from another start, so
  # the same parameters up to the solver's reach (within 2% here), where the refit without
  # the saved prior would fit evidence and reports with none (k_dp +210%).
  morph fit --warm-start "$refitted" --points "$points" --batch 256 --prior-weight 0
  assert_ok
  grep -q 'prior weight 0.3 of its fit' <<<"$output" || { show_run; fail "the summary does not name the fit's prior"; }
  morph --json fit --warm-start "$refitted" --points "$points" --batch 256 --prior-weight 0
  assert_ok
  local second
  second=$(save_json second)
  jq_true "$second" '.prior == "its fit'"'"'s" and .prior_weight == 0.3'
  params_agree "$first" "$second"
  jq 'del(.prior.centre)' "$refitted" >"$BATS_TEST_TMPDIR/no-centre.json"
  morph fit --warm-start "$BATS_TEST_TMPDIR/no-centre.json" --points "$points" --batch 256
  assert_morph_error no-centre.json centre
}

@test "fit --warm-start --save: parameters saved without their points keep their refit's prior too" {
  require_jq
  local model points bare="$BATS_TEST_TMPDIR/bare.json" refitted="$BATS_TEST_TMPDIR/refitted.json"
  model=$(saved_model)
  points=$(write_points)
  jq 'del(.evidence)' "$model" >"$bare"
  morph --json fit --warm-start "$bare" --points "$points" --batch 256 --save "$refitted"
  assert_ok
  local first
  first=$(save_json first)
  jq_true "$refitted" '(has("evidence") | not) and .prior.weight == 0.3 and .prior.centre == $start[0].params' \
    --slurpfile start "$bare"
  # Refitted again to the same reports: the saved prior, not one around the refit, so the
  # same parameters (a prior around the refit would count the reports twice).
  morph --json fit --warm-start "$refitted" --points "$points" --batch 256 --prior-weight 0
  assert_ok
  local second
  second=$(save_json second)
  jq_true "$second" '.prior == "its fit'"'"'s" and .prior_weight == 0.3 and .evidence_points == 0'
  params_agree "$first" "$second"
}

@test "fit --warm-start: malformed evidence in the model file is named" {
  require_jq
  local model points
  model=$(saved_model)
  points=$(write_points)
  jq '.evidence[1].terms.dp_ms = -1' "$model" >"$BATS_TEST_TMPDIR/negative.json"
  morph fit --warm-start "$BATS_TEST_TMPDIR/negative.json" --points "$points" --batch 256
  assert_morph_error negative.json 'evidence point 2' dp_ms '>= 0'
  jq 'del(.evidence[0].terms.offload)' "$model" >"$BATS_TEST_TMPDIR/flag.json"
  morph fit --warm-start "$BATS_TEST_TMPDIR/flag.json" --points "$points" --batch 256
  assert_morph_error flag.json 'evidence point 1' offload
  jq '.evidence = {}' "$model" >"$BATS_TEST_TMPDIR/object.json"
  morph fit --warm-start "$BATS_TEST_TMPDIR/object.json" --points "$points" --batch 256
  assert_morph_error object.json evidence array
}

@test "fit --warm-start on the artifact's bert model" {
  require_artifact
  local model="$BATS_TEST_TMPDIR/artifact-bert.json" points
  morph fit --profile "$ARTIFACT/profile/bert" --save "$model"
  assert_ok
  points=$(write_points)
  morph fit --warm-start "$model" --points "$points" --batch 256
  assert_ok
  grep -q 'refitted to 3 observed iterations' <<<"$output" || { show_run; fail "no summary line"; }
}

# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------

@test "fit: neither --profile nor --warm-start" {
  morph fit --batch 256
  assert_morph_error --profile --warm-start
}

@test "fit: --profile and --warm-start together" {
  morph fit --profile "$BATS_TEST_TMPDIR" --warm-start "$BATS_TEST_TMPDIR/m.json" --points x.csv --batch 256
  assert_morph_error --profile --warm-start excludes
}

@test "fit --warm-start without --points or --batch" {
  local model
  model=$(saved_model)
  morph fit --warm-start "$model" --batch 256
  assert_morph_error --warm-start --points
  morph fit --warm-start "$model" --points "$(write_points)"
  assert_morph_error --warm-start --batch
}

@test "fit: --points, --prior-weight need --warm-start; profile-only options refuse it" {
  morph fit --profile "$BATS_TEST_TMPDIR" --points x.csv
  assert_morph_error --points --warm-start
  morph fit --profile "$BATS_TEST_TMPDIR" --prior-weight 2
  assert_morph_error --prior-weight --warm-start
  morph fit --warm-start m.json --points x.csv --batch 256 --extra 3
  assert_morph_error --extra --warm-start
}

@test "fit --warm-start: a negative --prior-weight" {
  morph fit --warm-start "$BATS_TEST_TMPDIR/m.json" --points x.csv --batch 256 --prior-weight -1
  assert_morph_error --prior-weight
}

@test "fit --warm-start: a missing or malformed model file is named" {
  morph fit --warm-start "$BATS_TEST_TMPDIR/none.json" --points "$(write_points)" --batch 256
  assert_morph_error --warm-start none.json 'no such file'
  printf '{"format": "something else"}\n' >"$BATS_TEST_TMPDIR/other.json"
  morph fit --warm-start "$BATS_TEST_TMPDIR/other.json" --points "$(write_points)" --batch 256
  assert_morph_error --warm-start other.json morph-perf-model/1
}

@test "fit --warm-start: a missing points file is named" {
  local model
  model=$(saved_model)
  morph fit --warm-start "$model" --points "$BATS_TEST_TMPDIR/none.csv" --batch 256
  assert_morph_error --points none.csv 'no such file'
}

@test "fit --warm-start: each kind of bad points line names the file, line and column" {
  local model file
  model=$(saved_model)
  # Each case: the bad line, then the words the message must contain.
  check_line() {
    local line=$1
    shift
    file=$(points_with "$GOOD_PLAN,8xa800,215," "$line")
    morph fit --warm-start "$model" --points "$file" --batch 256
    assert_morph_error "bad.csv:3" "$@"
  }
  check_line 'dp=8 tp=1,8xa800,215,' 'column plan' 'missing plan key'
  check_line 'dp=8 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=32 speed=2,8xa800,215,' 'column plan' 'unknown plan key'
  check_line 'dp=4 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=32,4xa800,215,' 'column plan' 'global batch of 128' 256
  check_line "$GOOD_PLAN,8xb200,215," 'column gpus' 'unknown GPU type'
  check_line "$GOOD_PLAN,4xa800,215," 'column gpus' '4 GPUs'
  check_line "$GOOD_PLAN,8xa800,fast," 'column iter_ms' 'not a number'
  check_line "$GOOD_PLAN,8xa800,0," 'column iter_ms' '> 0'
  check_line "$GOOD_PLAN,8xa800,-3," 'column iter_ms'
  check_line "$GOOD_PLAN,8xa800,215,0" 'column cpus_per_gpu'
  check_line "$GOOD_PLAN,8xa800" '2 fields' 'header has 4'
}

@test "fit --warm-start: a points file with a bad header or no rows" {
  local model file="$BATS_TEST_TMPDIR/header.csv"
  model=$(saved_model)
  printf 'plan,gpus,time\n' >"$file"
  morph fit --warm-start "$model" --points "$file" --batch 256
  assert_morph_error header.csv:1 'unknown column' time
  printf 'plan,gpus,iter_ms\n' >"$file"
  morph fit --warm-start "$model" --points "$file" --batch 256
  assert_morph_error header.csv 'no observed iterations'
}

@test "fit --warm-start: a model fitted inline is named again with --model, and only that model" {
  local inline='layers=24,hidden=1024,heads=16,seq=512,vocab=30522' file="$BATS_TEST_TMPDIR/inline.json"
  run --separate-stderr "$MORPH" fit --profile "$(write_profile)" --model "$inline" --batch 256 --save "$file"
  [ "$status" -eq 0 ] || { show_run; fail "morph fit --model INLINE failed"; }
  local points
  points=$(write_points)
  # In no catalog: the saved name alone cannot be resolved.
  morph fit --warm-start "$file" --points "$points" --batch 256
  assert_morph_error "--warm-start" "custom-l24-h1024"
  morph fit --warm-start "$file" --points "$points" --batch 256 --model "$inline"
  [ "$status" -eq 0 ] || { show_run; fail "--model INLINE did not refit"; }
  morph fit --warm-start "$file" --points "$points" --batch 256 --model gpt2-1.5b
  assert_morph_error "--model" "'gpt2-1.5b' is not the model $file was fitted for ('custom-l24-h1024"
}
