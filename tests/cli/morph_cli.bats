#!/usr/bin/env bats
# End-to-end tests of the morph command line: plan, fit, validate and curve, their
# --json output, and how every kind of bad input is reported.
# Environment and helpers: common.bash.

# shellcheck disable=SC2016  # jq filters and literal '$(' strings are single-quoted on purpose

bats_require_minimum_version 1.5.0
load common

# A copy of the artifact's bert profile in a scratch folder named bert (the folder name is
# the profile name morph looks up in the artifact description).
copy_bert_profile() {
  local dir="$BATS_TEST_TMPDIR/$1/bert"
  mkdir -p "$dir"
  cp "$ARTIFACT/profile/bert/config.csv" "$ARTIFACT/profile/bert/data.csv" "$dir/"
  echo "$dir"
}

# A small cluster for morph curve: two DGX A100 nodes (16 GPUs), plus the V100 types
# without any node when "with-v100-types" is given. The type lines come from morph.conf.
write_cluster() {
  local file="$BATS_TEST_TMPDIR/cluster.conf"
  local types='^(GpuType=a100-80g |NodeType=dgx-a100 )'
  [ "${1-}" = with-v100-types ] && types='^(GpuType=(a100-80g|v100-32g) |NodeType=(dgx-a100|dgx1-v100) )'
  grep -E "$types" "$MORPH_SRCDIR/etc/morph.conf" >"$file"
  echo 'NodeName=n[1-2] NodeType=dgx-a100' >>"$file"
  local expected=3
  [ "${1-}" = with-v100-types ] && expected=5
  [ "$(wc -l <"$file")" -eq "$expected" ] || fail "cluster file: expected $expected lines" "$(cat "$file")"
  echo "$file"
}

# ---------------------------------------------------------------------------------------
# Global options: --version, --help, subcommand required
# ---------------------------------------------------------------------------------------

@test "--version prints the package name and version" {
  morph --version
  assert_ok
  [[ "$output" =~ ^morph\ [0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || { show_run; fail "unexpected --version output"; }
  if [ -f "$MORPH_BUILDDIR/config.h" ]; then
    local expected
    expected=$(sed -n 's/^#define PACKAGE_STRING "\(.*\)"$/\1/p' "$MORPH_BUILDDIR/config.h")
    [ "$output" = "$expected" ] || fail "--version says '$output', config.h says '$expected'"
  fi
}

@test "--help lists the global options and every subcommand" {
  morph --help
  assert_ok
  local word
  for word in 'Usage: morph' --config --catalog --spec --json plan fit validate curve; do
    [[ "$output" == *"$word"* ]] || { show_run; fail "--help does not mention '$word'"; }
  done
}

@test "plan --help lists the plan options" {
  morph plan --help
  assert_ok
  local word
  for word in --model --batch --gpus --seq --plans --framework --perf --top --all; do
    [[ "$output" == *"$word"* ]] || { show_run; fail "plan --help does not mention '$word'"; }
  done
}

@test "no subcommand is an error" {
  morph
  assert_morph_error subcommand
}

@test "a missing required option is named" {
  morph plan --model gpt2-1.5b --gpus 8xa100
  assert_morph_error --batch required
}

@test "an unknown option is named" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 8xa100 --bogus-option
  assert_morph_error --bogus-option
}

@test "output that cannot be written is a failure, not a success" {
  [ -w /dev/full ] || skip "no /dev/full"
  run --separate-stderr bash -c '"$1" plan --model bert --batch 64 --gpus 8xa800 >/dev/full' _ "$MORPH"
  output=""  # the output went to /dev/full
  assert_morph_error "cannot write standard output"
  run --separate-stderr bash -c '"$1" --help >/dev/full' _ "$MORPH"
  output=""
  assert_morph_error "cannot write standard output"
}

@test "an unknown subcommand is named" {
  morph frobnicate
  assert_morph_error frobnicate
}

@test "a subcommand's option before the subcommand is named as misplaced (it was 'unknown subcommand 3')" {
  morph --top 3 plan --model bert --batch 64 --gpus 8xa800
  assert_morph_error "'--top' is not an option of morph itself: a subcommand's options follow it"
  [ "$status" -eq 2 ] || fail "status $status"
  morph --json --config="$MORPH_CONF" plan --model bert --batch 64 --gpus 8xa800
  assert_ok
  morph plan --model bert --batch 64 --gpus 8xa800 8xv100
  assert_morph_error "unexpected argument 8xv100"
  morph plan --model bert --batch 64 --gpus 8xa800 --gpu 8xv100
  assert_morph_error "unknown option --gpu"
}

# ---------------------------------------------------------------------------------------
# plan: ranking, JSON output, memory limits, plan families
# ---------------------------------------------------------------------------------------

@test "plan: LLaMA-2-7B on 2x8xa100 ranks plans on all 16 GPUs and lists infeasible ones" {
  morph plan --model llama2-7b --batch 512 --gpus 2x8xa100
  assert_ok
  [[ "${lines[0]}" == "llama2-7b "*"global batch 512 on 2x8xa100-80g (16 GPUs)" ]] || { show_run; fail "bad title line"; }
  [[ "$output" == *$'\nrank  plan'* ]] || { show_run; fail "no ranked table"; }
  local first
  first=$(grep -E '^1 +dp=' <<<"$output") || { show_run; fail "no plan ranked 1"; }
  [[ "$first" =~ dp=([0-9]+)\ tp=([0-9]+)\ pp=([0-9]+) ]] || fail "cannot parse the first plan: $first"
  local dp=${BASH_REMATCH[1]} tp=${BASH_REMATCH[2]} pp=${BASH_REMATCH[3]}
  [ $((dp * tp * pp)) -eq 16 ] || fail "first plan uses dp*tp*pp=$((dp * tp * pp)) GPUs, not 16: $first"
  # The default shows the top 10 and says how many more there are.
  [ "$(grep -cE '^[0-9]+ +dp=' <<<"$output")" -eq 10 ] || { show_run; fail "expected 10 ranked rows"; }
  grep -qE '^\([0-9]+ more feasible plans; --all lists them\)$' <<<"$output" || { show_run; fail "no '--all' hint"; }
  # Infeasible plans come with their reason.
  grep -qx 'infeasible:' <<<"$output" || { show_run; fail "no infeasible section"; }
  grep -qE '^plan +reason$' <<<"$output" || { show_run; fail "no infeasible table header"; }
  grep -qE '^dp=16 tp=1 pp=1 .* out of memory: [0-9.]+ GiB per GPU > 80 GiB on a100-80g$' <<<"$output" \
    || { show_run; fail "pure data parallelism should be out of memory"; }
  grep -qE '^dp=1 tp=16 pp=1 .*tp=16 does not fit inside a node' <<<"$output" \
    || { show_run; fail "tp=16 across two nodes should be rejected"; }
}

@test "plan --all lists every feasible plan" {
  morph plan --model llama2-7b --batch 512 --gpus 2x8xa100 --all
  assert_ok
  [ "$(grep -cE '^[0-9]+ +dp=' <<<"$output")" -gt 10 ] || { show_run; fail "--all should list more than 10 plans"; }
  [[ "$output" != *"more feasible plans"* ]] || { show_run; fail "--all still hides plans"; }
}

@test "plan --json: feasible plans use 16 GPUs, fit in 80 GiB, and are sorted by throughput" {
  require_jq
  morph --json plan --model llama2-7b --batch 512 --gpus 2x8xa100
  assert_ok
  local f
  f=$(save_json plan)
  jq_true "$f" '.model == "llama2-7b" and .global_batch == 512 and .gpus == 16 and .allocation == "2x8xa100-80g"'
  jq_true "$f" '(.feasible | length) > 0 and (.infeasible | length) > 0'
  jq_true "$f" 'all(.feasible[]; .feasible == true and (.plan | .dp * .tp * .pp) == 16)'
  jq_true "$f" 'all(.feasible[]; .memory.gpu_bytes > 0 and .memory.gpu_bytes < 80 * 1073741824)'
  jq_true "$f" 'all(.feasible[]; .throughput_samples_per_s > 0 and .time_ms.iteration > 0)'
  jq_true "$f" '[.feasible[].throughput_samples_per_s] as $t | $t == ($t | sort | reverse)'
  jq_true "$f" 'all(.infeasible[]; .feasible == false and (.reason | type == "string" and length > 0))'
}

@test "plan: --json after the subcommand gives the same output as before it" {
  require_jq
  morph --json plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_ok
  local before=$output
  morph plan --model gpt2-1.5b --batch 64 --gpus 8xa100 --json
  assert_ok
  [ "$output" = "$before" ] || fail "--json output depends on where the flag is"
}

@test "plan: LLaMA-2-7B with batch 16 on one A100 fits only with offload" {
  require_jq
  morph --json plan --model llama2-7b --batch 16 --gpus 1xa100
  assert_ok
  local f
  f=$(save_json plan)
  jq_true "$f" '(.feasible | length) > 0'
  jq_true "$f" 'all(.feasible[]; .plan.offload == true)'
  jq_true "$f" 'any(.infeasible[]; .plan.offload == false and (.reason | test("out of memory")))'
}

@test "plan --framework: Megatron-LM gets ZeRO-1 at most and no offload; DeepSpeed shards further" {
  require_jq
  morph --json plan --model llama2-7b --batch 64 --gpus 2xa100 --framework deepspeed
  assert_ok
  local ds
  ds=$(save_json deepspeed)
  jq_true "$ds" '.feasible[0].plan.zero >= 2 or .feasible[0].plan.offload'
  morph --json plan --model llama2-7b --batch 64 --gpus 2xa100 --framework megatron
  assert_ok
  local mg
  mg=$(save_json megatron)
  jq_true "$mg" '(.feasible | length) > 0 and all(.feasible[]; .plan.zero <= 1 and .plan.offload == false)'
  morph plan --model llama2-7b --batch 64 --gpus 2xa100 --framework caffe
  assert_morph_error --framework caffe
}

@test "plan --framework: Megatron-LM's ZeRO-1 keeps fp32 gradients and no DeepSpeed buckets" {
  require_jq
  local fw
  for fw in megatron deepspeed; do
    morph --json plan --model llama2-7b --batch 64 --gpus 8xa100 --plans dp,zero,gc --framework "$fw" --all
    assert_ok
    save_json "$fw" >/dev/null
  done
  local mg="$BATS_TEST_TMPDIR/megatron.json" ds="$BATS_TEST_TMPDIR/deepspeed.json"
  jq_true "$mg" '[.feasible[] | select(.plan.zero == 1)] | length > 0'
  jq_true "$mg" 'all(.feasible[] | select(.plan.zero == 1); .memory.gradients_bytes == 2 * .memory.weights_bytes
                 and .memory.buckets_bytes == 0)'
  jq_true "$mg" 'all(.feasible[] | select(.plan.zero == 0); .memory.gradients_bytes == .memory.weights_bytes)'
  jq_true "$ds" 'all(.feasible[] | select(.plan.zero == 1); .memory.gradients_bytes == .memory.weights_bytes
                 and .memory.buckets_bytes > 0)'
}

@test "plan: GPT-2 1.5B with batch 16 on one A100 fits without offload" {
  require_jq
  morph --json plan --model gpt2-1.5b --batch 16 --gpus 1xa100
  assert_ok
  local f
  f=$(save_json plan)
  jq_true "$f" 'any(.feasible[]; .plan.offload == false)'
  jq_true "$f" 'all(.feasible[]; .plan.dp == 1 and .plan.tp == 1 and .plan.pp == 1)'
}

@test "plan: heterogeneous 4xa100+4xv100 fits every feasible plan into the 32 GiB V100" {
  require_jq
  morph --json plan --model llama2-7b --batch 64 --gpus 4xa100+4xv100
  assert_ok
  local f
  f=$(save_json plan)
  jq_true "$f" '.allocation == "4xa100-80g+4xv100-32g" and .gpus == 8'
  jq_true "$f" '(.feasible | length) > 0'
  jq_true "$f" 'all(.feasible[]; .memory.gpu_bytes <= 32 * 1073741824)'
  jq_true "$f" 'all(.feasible[]; (.plan | .dp * .tp * .pp) == 8)'
  # Plans that would fit an A100 but not a V100 are rejected because of the V100.
  jq_true "$f" 'any(.infeasible[]; .memory.gpu_bytes < 80 * 1073741824 and (.reason | test("> 32 GiB on v100-32g")))'
}

@test "plan: an inline model spec is accepted" {
  require_jq
  morph --json plan --model layers=32,hidden=4096,heads=32,seq=4096,vocab=32000 --batch 64 --gpus 8xa100
  assert_ok
  local f
  f=$(save_json plan)
  jq_true "$f" '.model == "custom-l32-h4096" and .seq == 4096'
  # Frenzy's parameter count: V*h + l*(12h^2 + 13h).
  jq_true "$f" '.params == 32000 * 4096 + 32 * (12 * 4096 * 4096 + 13 * 4096)'
  jq_true "$f" '(.feasible | length) > 0'
  morph plan --model layers=32,hidden=4096,heads=32,seq=4096,vocab=32000 --batch 64 --gpus 8xa100
  assert_ok
  [[ "${lines[0]}" == "custom-l32-h4096 "* ]] || { show_run; fail "text output does not name the inline model"; }
  grep -qE '^1 +dp=' <<<"$output" || { show_run; fail "no plan ranked 1"; }
}

@test "plan: keys of an inline model spec in any letter case mean the same (issue 10, defect 4)" {
  require_jq
  local f
  morph --json plan --model layers=24,hidden=2048,heads=16,seq=2048,VOCAB=50257 --batch 64 --gpus 8xa100
  assert_ok
  f=$(save_json plan)
  # VOCAB once fell into the params branch: a 50,257-parameter model.
  jq_true "$f" '.params == 50257 * 2048 + 24 * (12 * 2048 * 2048 + 13 * 2048)'
  morph --json plan --model LAYERS=24,HIDDEN=2048,HEADS=16,SEQ=2048,Vocab=50257 --batch 64 --gpus 8xa100
  assert_ok
  f=$(save_json plan)
  jq_true "$f" '.params == 50257 * 2048 + 24 * (12 * 2048 * 2048 + 13 * 2048)'
  morph plan --model layers=2,hidden=8,heads=2,seq=4,Depth=3 --batch 8 --gpus 1xa100
  assert_morph_error --model "unknown key 'Depth'"
}

@test "plan --plans dp: only pure data parallelism" {
  require_jq
  morph --json plan --model gpt2-1.5b --batch 64 --gpus 8xa100 --plans dp
  assert_ok
  local f
  f=$(save_json plan)
  jq_true "$f" '(.feasible | length) > 0'
  jq_true "$f" 'all(.feasible[], .infeasible[]; .plan | .tp == 1 and .pp == 1 and .zero == 0 and .offload == false)'
  jq_true "$f" 'all(.feasible[]; .plan.family == "dp")'
}

@test "plan: tensor parallelism that does not divide the heads is infeasible with a reason" {
  require_jq
  # gpt2-1.5b has 25 attention heads.
  morph --json plan --model gpt2-1.5b --batch 64 --gpus 2xa100
  assert_ok
  local f
  f=$(save_json plan)
  jq_true "$f" 'any(.infeasible[]; .plan.tp == 2 and (.reason | test("does not divide heads")))'
  jq_true "$f" 'all(.feasible[]; .plan.tp == 1)'
  morph plan --model gpt2-1.5b --batch 64 --gpus 2xa100
  assert_ok
  grep -qE '^dp=1 tp=2 .*tp=2 does not divide heads=25$' <<<"$output" || { show_run; fail "no heads reason in the table"; }
}

# ---------------------------------------------------------------------------------------
# Bad input: each must fail with one "morph: ..." line on stderr naming the problem
# ---------------------------------------------------------------------------------------

@test "bad input: unknown model" {
  morph plan --model no-such-model --batch 64 --gpus 8xa100
  assert_morph_error --model 'unknown model' "'no-such-model'"
}

@test "bad input: --batch 0" {
  morph plan --model gpt2-1.5b --batch 0 --gpus 8xa100
  assert_morph_error --batch range
}

@test "bad input: --batch -3" {
  morph plan --model gpt2-1.5b --batch -3 --gpus 8xa100
  assert_morph_error --batch -3
}

@test "bad input: --batch abc" {
  morph plan --model gpt2-1.5b --batch abc --gpus 8xa100
  assert_morph_error --batch abc
}

@test "bad input: --batch beyond 64 bits" {
  morph plan --model gpt2-1.5b --batch 99999999999999999999999 --gpus 8xa100
  assert_morph_error --batch 99999999999999999999999
}

@test "bad input: --batch and --seq take what the plugins take, no hexadecimal or spaces (issue 10, defect 10)" {
  morph plan --model gpt2-1.5b --batch 0x10 --gpus 8xa100
  assert_morph_error --batch "'0x10' is not an integer"
  morph plan --model gpt2-1.5b --batch ' 16' --gpus 8xa100
  assert_morph_error --batch "' 16' contains spaces"
  morph plan --model gpt2-1.5b --batch 16 --seq 1e3 --gpus 8xa100
  assert_morph_error --seq "'1e3' is not an integer"
  morph plan --model layers=2,hidden=8,heads=2,seq=4,params=0x1p40 --batch 8 --gpus 1xa100
  assert_morph_error --model "params='0x1p40' is not a decimal number"
  morph plan --model gpt2-1.5b --batch +16 --gpus 8xa100
  assert_ok
  # Review of the command: CLI11 read "064" as octal 52 and "0x10" as 16, with exit 0.
  morph plan --model gpt2-1.5b --batch 064 --gpus 8xa100
  assert_ok
  [[ "${lines[0]}" == *"global batch 64 on"* ]] || fail "064 read as ${lines[0]}"
  morph plan --model gpt2-1.5b --batch 64 --gpus 8xa100 --top 0x10
  assert_morph_error --top "'0x10' is not an integer"
}

@test "bad input: --gpus 8x (no GPU type)" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 8x
  assert_morph_error --gpus 'not GPUSxTYPE'
}

@test "bad input: --gpus x" {
  morph plan --model gpt2-1.5b --batch 64 --gpus x
  assert_morph_error --gpus 'not GPUSxTYPE'
}

@test "bad input: --gpus 0xa100" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 0xa100
  assert_morph_error --gpus 'GPU count' "'0xa100'" 'out of range'
}

@test "bad input: --gpus 9xa100 (more GPUs than a node has)" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 9xa100
  assert_morph_error --gpus 'GPU count' "'9xa100'" 'out of range [1, 8]'
}

@test "bad input: --gpus 8xnosuchgpu" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 8xnosuchgpu
  assert_morph_error --gpus 'unknown GPU type' "'nosuchgpu'" a100-80g
}

@test "bad input: --gpus 2x8x" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 2x8x
  assert_morph_error --gpus 'not GPUSxTYPE'
}

@test "bad input: --gpus 8xa100+ (empty term)" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 8xa100+
  assert_morph_error --gpus 'empty term'
}

@test "bad input: --gpus with too many parts or nodes" {
  morph plan --model gpt2-1.5b --batch 64 --gpus 1x2x8xa100
  assert_morph_error --gpus "'8xa100'" 'unknown GPU type'
  morph plan --model gpt2-1.5b --batch 64 --gpus 70000x8xa100
  assert_morph_error --gpus 'node count' 'out of range'
}

@test "bad input: inline spec with layers=10^30" {
  morph plan --model layers=1000000000000000000000000000000,hidden=4096,heads=32,seq=4096,vocab=32000 \
    --batch 64 --gpus 8xa100
  assert_morph_error --model layers 'out of range'
}

@test "bad input: inline spec with an unknown key" {
  morph plan --model layers=32,hidden=4096,heads=32,seq=4096,vocab=32000,colour=blue --batch 64 --gpus 8xa100
  assert_morph_error --model 'unknown key' "'colour'"
}

@test "bad input: inline spec without heads" {
  morph plan --model layers=32,hidden=4096,seq=4096,vocab=32000 --batch 64 --gpus 8xa100
  assert_morph_error --model 'missing heads'
}

@test "bad input: inline spec whose hidden size is not divisible by heads" {
  morph plan --model layers=32,hidden=4096,heads=30,seq=4096,vocab=32000 --batch 64 --gpus 8xa100
  assert_morph_error --model hidden=4096 heads=30 'not divisible'
}

@test "bad input: inline spec that gives a key twice" {
  morph plan --model layers=32,layers=40,hidden=4096,heads=32,seq=4096 --batch 64 --gpus 8xa100
  assert_morph_error --model layers
}

@test "bad input: a 4 KB --model value is reported on one shortened line" {
  local long
  long=$(printf 'A%.0s' {1..4096})
  morph plan --model "$long" --batch 64 --gpus 8xa100
  assert_morph_error --model 'unknown model' '(4096 bytes)'
  [ "${#stderr}" -lt 1024 ] || fail "the message is ${#stderr} bytes long"
  [[ "$stderr" != *"$(printf 'A%.0s' {1..100})"* ]] || fail "the message repeats the whole value"
}

@test "bad input: shell metacharacters in --model are not executed" {
  local marker="$BATS_TEST_TMPDIR/pwned"
  local value="\$(touch $marker);\`touch $marker-2\`;id"
  morph plan --model "$value" --batch 64 --gpus 8xa100
  assert_morph_error --model 'unknown model' '$(touch'
  [ ! -e "$marker" ] && [ ! -e "$marker-2" ] || fail "a command in --model was executed"
}

@test "bad input: --config that does not exist" {
  morph --config "$BATS_TEST_TMPDIR/missing.conf" plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$BATS_TEST_TMPDIR/missing.conf" 'no such file'
}

@test "bad input: MORPH_CONF that does not exist" {
  MORPH_CONF="$BATS_TEST_TMPDIR/missing.conf" morph plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$BATS_TEST_TMPDIR/missing.conf" 'no such file'
}

@test "bad input: --config that cannot be read" {
  [ "$(id -u)" -ne 0 ] || skip "root can read a file without read permission"
  local conf="$BATS_TEST_TMPDIR/unreadable.conf"
  cp "$MORPH_SRCDIR/etc/morph.conf" "$conf"
  chmod 000 "$conf"
  morph --config "$conf" plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$conf" 'cannot open'
}

@test "bad input: --config that is a folder" {
  morph --config "$BATS_TEST_TMPDIR" plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$BATS_TEST_TMPDIR"
}

@test "bad input: a morph.conf with an unknown key names the file, the line and the key" {
  local conf="$BATS_TEST_TMPDIR/morph.conf"
  cp "$MORPH_SRCDIR/etc/morph.conf" "$conf"
  echo 'FrobnicationLevel=11' >>"$conf"
  local line
  line=$(wc -l <"$conf")
  morph --config "$conf" plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$conf:$line:" 'unknown key' "'FrobnicationLevel'"
}

@test "bad input: a morph.conf parameter set twice names both lines" {
  local conf="$BATS_TEST_TMPDIR/morph.conf"
  cp "$MORPH_SRCDIR/etc/morph.conf" "$conf"
  echo 'ComputeEfficiency=0.5' >>"$conf"
  morph --config "$conf" plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$conf:$(wc -l <"$conf"):" ComputeEfficiency 'already set on line'
}

@test "bad input: a morph.conf with an out-of-range value names the file, the line and the key" {
  local conf="$BATS_TEST_TMPDIR/morph.conf"
  grep -v '^ComputeEfficiency=' "$MORPH_SRCDIR/etc/morph.conf" >"$conf"
  echo 'ComputeEfficiency=7' >>"$conf"
  local line
  line=$(wc -l <"$conf")
  morph --config "$conf" plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$conf:$line:" ComputeEfficiency 'out of range'
}

@test "bad input: a bounded number that is NaN is refused naming the flag" {
  morph simulate --workload "$BATS_TEST_TMPDIR/none.csv" --interval nan
  assert_morph_error --interval 'not a finite number'
  # Below morph.conf's smallest SchedulingIntervalSeconds: a day's replay took hours.
  morph simulate --workload "$BATS_TEST_TMPDIR/none.csv" --interval 0.001
  assert_morph_error --interval 'not in range 1.000000'
}

@test "bad input: --perf that is not JSON" {
  local perf="$BATS_TEST_TMPDIR/perf.json"
  echo 'this is not JSON' >"$perf"
  morph plan --perf "$perf" --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error --perf "$perf" malformed
}

@test "bad input: --perf that does not exist" {
  morph plan --perf "$BATS_TEST_TMPDIR/none.json" --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error --perf "$BATS_TEST_TMPDIR/none.json" 'no such file'
}

@test "bad input: --perf that is a folder" {
  morph plan --perf "$BATS_TEST_TMPDIR" --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error --perf "$BATS_TEST_TMPDIR"
}

@test "bad input: --spec that is a folder" {
  mkdir "$BATS_TEST_TMPDIR/spec"
  morph --spec "$BATS_TEST_TMPDIR/spec" validate --artifact "$BATS_TEST_TMPDIR"
  assert_morph_error "$BATS_TEST_TMPDIR/spec"
}

@test "bad input: --catalog that does not exist" {
  morph --catalog "$BATS_TEST_TMPDIR/none.json" plan --model gpt2-1.5b --batch 64 --gpus 8xa100
  assert_morph_error "$BATS_TEST_TMPDIR/none.json" 'no such file'
}

# ---------------------------------------------------------------------------------------
# fit: fitting the iteration-time model to a profile folder
# ---------------------------------------------------------------------------------------

@test "fit: bert's profile gives the 13 parameters and an error per measured point" {
  require_artifact
  morph fit --profile "$ARTIFACT/profile/bert"
  assert_ok
  [[ "${lines[0]}" == *": bert-336m with global batch 32, 7 measured points" ]] || { show_run; fail "bad title"; }
  grep -qE '^parameter +value +unit +status$' <<<"$output" || { show_run; fail "no parameter table"; }
  local k
  for k in k_bwd k_sync k_opt k_opt_off k_off k_swap k_const k_dp k_mp k_pcie k_net k_opt_model k_const_off; do
    grep -qE "^$k +[-+0-9.e]+ " <<<"$output" || { show_run; fail "parameter $k is missing"; }
  done
  grep -qE '^RMSLE [0-9.]+' <<<"$output" || { show_run; fail "no RMSLE"; }
  grep -qE '^point +measured +predicted +error%$' <<<"$output" || { show_run; fail "no point table"; }
  [ "$(grep -cE 'config\.csv:[0-9]+ .* ms +[0-9.]+ m?s +[-+][0-9]+\.[0-9]{2}$' <<<"$output")" -eq 7 ] \
    || { show_run; fail "expected 7 points with a signed error"; }
}

@test "fit: a profile with fewer residuals than parameters says so, and marks those on a bound" {
  require_artifact
  morph fit --profile "$ARTIFACT/profile/llama7b"
  assert_ok
  grep -qE '^note: 3 residuals for [0-9]+ fitted parameters: the points do not determine them$' <<<"$output" ||
    { show_run; fail "no note"; }
  grep -qE '^k_bwd +6 +.* fitted, on its bound$' <<<"$output" || { show_run; fail "k_bwd on its bound not marked"; }
  morph fit --profile "$ARTIFACT/profile/bert"
  assert_ok
  ! grep -q "^note: .* residuals" <<<"$output" || { show_run; fail "bert's 7 points determine its parameters"; }
}

@test "fit --profile DIR/ --extra: a trailing slash finds the traces as without it" {
  require_artifact
  morph fit --profile "$ARTIFACT/profile/bert/" --extra 3
  assert_ok
  [[ "${lines[0]}" == *": bert-336m with global batch 32, 10 measured points (including 3 trace rows)" ]] ||
    { show_run; fail "bad title"; }
}

@test "fit --json: params has the 17 parameters and points the measured points" {
  require_artifact
  require_jq
  morph --json fit --profile "$ARTIFACT/profile/bert"
  assert_ok
  local f
  f=$(save_json fit)
  jq_true "$f" '.model == "bert-336m" and .global_batch == 32 and .fitted == true'
  jq_true "$f" '(.params | keys) == (["k_bwd", "k_sync", "k_opt", "k_opt_off", "k_off", "k_swap", "k_const", "k_dp", "k_mp", "k_pcie", "k_net", "k_opt_model", "k_const_off", "k_pipe", "k_fwd_mp", "k_odd", "k_stage"] | sort)'
  jq_true "$f" 'all(.params[]; (.value | type) == "number" and (.unit | type) == "string")'
  jq_true "$f" '(.points | length) == 7'
  jq_true "$f" 'all(.points[]; .measured_ms > 0 and .predicted_ms > 0 and (.error | type) == "number")'
  jq_true "$f" 'all(.points[]; ((.predicted_ms - .measured_ms) / .measured_ms - .error) | fabs < 1e-9)'
}

@test "fit --save writes a model that plan --perf accepts for the same model only" {
  require_artifact
  require_jq
  local saved="$BATS_TEST_TMPDIR/bert-perf.json"
  morph fit --profile "$ARTIFACT/profile/bert" --save "$saved"
  assert_ok
  [ -s "$saved" ] || fail "--save wrote nothing"
  jq_true "$saved" '.format == "morph-perf-model/1" and .model == "bert-336m"'
  jq_true "$saved" '(.params | length) == 17 and .forward.per_sample_ms > 0'

  morph plan --perf "$saved" --model bert-336m --batch 256 --gpus 8xa800
  assert_ok
  [[ "$output" == *"performance model: $saved ("*"k_bwd="* ]] || { show_run; fail "plan does not use the saved model"; }
  grep -qE '^1 +dp=' <<<"$output" || { show_run; fail "no plan ranked 1"; }

  # The catalog alias resolves to the same model.
  morph plan --perf "$saved" --model bert --batch 256 --gpus 8xa800
  assert_ok

  morph plan --perf "$saved" --model gpt2-1.5b --batch 256 --gpus 8xa800
  assert_morph_error --perf "$saved" 'fitted for bert-336m' gpt2-1.5b

  # The sequence length it was fitted at is saved; a job of another length is predicted
  # from the forward time scaled by its FLOPs (twice the tokens: more than twice the time).
  jq_true "$saved" '.forward.seq_len == 512'
  local at512 at1024
  morph plan --perf "$saved" --model bert-336m --batch 256 --gpus 8xa800 --seq 512
  assert_ok
  [[ "$output" != *"scaled by FLOPs"* ]] || { show_run; fail "scaled at its own length"; }
  at512=$(awk '$1 == 1 { print $NF }' <<<"$output")  # samples/s of the best plan
  morph plan --perf "$saved" --model bert-336m --batch 256 --gpus 8xa800 --seq 1024
  assert_ok
  [[ "$output" == *"fitted at sequence length 512, forward time scaled by FLOPs to 1024"* ]] || { show_run; fail; }
  at1024=$(awk '$1 == 1 { print $NF }' <<<"$output")
  awk -v a="$at512" -v b="$at1024" 'BEGIN { exit !(b < a) }' || { show_run; fail "1024 tokens not slower: $at512 -> $at1024 samples/s"; }
}

@test "plan --perf loads a model saved with the 7 appendix parameters only (bandwidth factors at 1)" {
  local saved="$BATS_TEST_TMPDIR/old-perf.json"
  cat >"$saved" <<'JSON'
{"format": "morph-perf-model/1", "model": "bert-336m",
 "forward": {"intercept_ms": 12.5, "per_sample_ms": 0.82, "reference_speed": 1.0},
 "params": {"k_bwd": 2.0, "k_sync": 1.5, "k_opt": 0.07, "k_opt_off": 2.0, "k_off": 2.0, "k_swap": 2.0, "k_const": 6.0}}
JSON
  morph plan --perf "$saved" --model bert-336m --batch 256 --gpus 8xa800
  assert_ok
  [[ "$output" == *"k_dp=1 k_mp=1 k_pcie=1 k_net=1 k_opt_model=0.25 k_const_off=0"* ]] || { show_run; fail "the factors are not 1"; }
  sed -i 's/"k_swap": 2.0,/"k_swap": 2.0, "k_net": 99,/' "$saved"
  morph plan --perf "$saved" --model bert-336m --batch 256 --gpus 8xa800
  assert_morph_error "k_net=99 is outside"
}

@test "fit: every artifact profile is reproduced by its own fit within 5% (issue 11)" {
  require_artifact
  require_jq
  local dir f
  for dir in "$ARTIFACT"/profile/*/; do
    morph --json fit --profile "$dir"
    assert_ok
    f=$(save_json "fit-$(basename "$dir")")
    jq_true "$f" 'all(.points[]; (.error | fabs) <= 0.05)' || fail "$(basename "$dir"): a point is off by more than 5%"
  done
}

@test "fit: --model naming the profile's own model (by an alias) fits as without it; another model needs --batch" {
  require_artifact
  morph fit --profile "$ARTIFACT/profile/bert"
  assert_ok
  local plain=$output
  morph fit --profile "$ARTIFACT/profile/bert" --model bert
  assert_ok
  [ "$output" = "$plain" ] || fail "$output"
  morph fit --profile "$ARTIFACT/profile/bert" --model roberta
  assert_morph_error "--model: a model other than the profile's described one needs --batch"
}

@test "validate --online --refit-threshold: no refit where the model predicts the observed rows within it" {
  require_artifact
  require_jq
  morph --json validate --artifact "$ARTIFACT" --online --refit-threshold 10
  assert_ok
  local f
  f=$(save_json validate-online-gated)
  jq_true "$f" '.refit_threshold == 10 and .halved == 0 and (.curves | length) > 20'
  jq_true "$f" '[.curves[].avg_error | unique | length == 1] | all'
  jq_true "$f" '.summary | startswith("online: refit_threshold=10 families=")'
  morph --json validate --artifact "$ARTIFACT" --online
  assert_ok
  f=$(save_json validate-online)
  jq_true "$f" '.refit_threshold == 0 and ([.curves[].avg_error | unique | length > 1] | any)'
  # Per model: every family counted once, the held-out rows summed, the halved ones too.
  jq_true "$f" '([.models[].families] | add) == (.curves | length) and ([.models[].halved] | add) == .halved'
  jq_true "$f" '[.models[] as $m | ([.curves[] | select(.workload == $m.workload) | .held_out] | add) == $m.held_out] | all'
  jq_true "$f" '[.models[] as $m | ([.curves[] | select(.workload == $m.workload) | .held_out * .avg_error[0]] | add)
                / $m.held_out - $m.avg_error_before | fabs < 1e-12] | all'
  morph validate --artifact "$ARTIFACT" --refit-threshold 0.1
  assert_morph_error --refit-threshold --online
  morph validate --artifact "$ARTIFACT" --online --refit-threshold -1
  assert_morph_error --refit-threshold
}

@test "validate --online --orders: the trace order's count as --online has it, and one count per random order" {
  require_artifact
  require_jq
  morph --json validate --artifact "$ARTIFACT" --online --extra 0
  assert_ok
  local plain f
  plain=$(save_json validate-online-k0)
  morph --json validate --artifact "$ARTIFACT" --online --extra 0 --orders 2
  assert_ok
  f=$(save_json validate-online-orders)
  jq_true "$f" '.halved_trace_order == $halved and .orders == 2' --argjson halved "$(jq .halved "$plain")"
  jq_true "$f" '(.halved_per_order | length) == 2 and (.families | length) > 20'
  # Each order's count is the number of families halved in it.
  jq_true "$f" '([.families[].orders_halved] | add) == (.halved_per_order | add)'
  jq_true "$f" '[.families[] | .orders_halved >= 0 and .orders_halved <= 2] | all'
  jq_true "$f" '.summary | test("^online orders: orders=2 families=[0-9]+ halved_after_3: trace_order=[0-9]+ random_mean=")'
  morph validate --artifact "$ARTIFACT" --orders 2
  assert_morph_error --orders --online
}

@test "fit --save to a folder that does not exist fails" {
  require_artifact
  morph fit --profile "$ARTIFACT/profile/bert" --save "$BATS_TEST_TMPDIR/no/such/dir/perf.json"
  assert_morph_error --save 'cannot write'
}

@test "fit: a data.csv row with the wrong field count names the file and line" {
  require_artifact
  local dir
  dir=$(copy_bert_profile wrong-fields)
  sed -i '3s/$/,42/' "$dir/data.csv"
  morph fit --profile "$dir"
  assert_morph_error "$dir/data.csv:3:" fields header
}

@test "fit: a non-numeric iter_time names the file, line and column" {
  require_artifact
  local dir
  dir=$(copy_bert_profile not-numeric)
  # Field 4 of data.csv is iter_time.
  sed -i '4s/^\([^,]*,[^,]*,[^,]*,\)[^,]*/\1fast/' "$dir/data.csv"
  grep -q ',fast,' "$dir/data.csv" || fail "could not corrupt data.csv"
  morph fit --profile "$dir"
  assert_morph_error "$dir/data.csv:4:" iter_time "'fast'" 'not a number'
}

@test "fit: a missing data.csv is named" {
  require_artifact
  local dir
  dir=$(copy_bert_profile no-data)
  rm "$dir/data.csv"
  morph fit --profile "$dir"
  assert_morph_error "$dir/data.csv" 'no such file'
}

@test "fit: config.csv and data.csv of different lengths are reported" {
  require_artifact
  local dir
  dir=$(copy_bert_profile short-data)
  sed -i '$d' "$dir/data.csv"
  morph fit --profile "$dir"
  assert_morph_error "$dir/config.csv" "$dir/data.csv" rows
}

@test "fit: a profile folder that does not exist" {
  morph fit --profile "$BATS_TEST_TMPDIR/nowhere"
  assert_morph_error --profile 'not a folder'
}

@test "fit: a profile unknown to the artifact description asks for --model and --batch" {
  mkdir "$BATS_TEST_TMPDIR/mystery"
  morph fit --profile "$BATS_TEST_TMPDIR/mystery"
  assert_morph_error --profile "'mystery'" --model --batch
}

@test "fit: --model without --batch on a known profile" {
  require_artifact
  morph fit --profile "$ARTIFACT/profile/bert" --model gpt2-1.5b
  assert_morph_error --batch
  [[ "$stderr" != *"is not described"* ]] || fail "misleading message"
}

# ---------------------------------------------------------------------------------------
# validate: the artifact's measurements (Morphling Table 2)
# ---------------------------------------------------------------------------------------

@test "validate: per-workload rows and an overall line with K=3" {
  require_artifact
  require_jq
  morph validate --artifact "$ARTIFACT"
  assert_ok
  local last=${lines[${#lines[@]} - 1]}
  [[ "$last" =~ ^overall:\ avg\ [0-9.]+%\ max\ [0-9.]+%\ over\ [0-9]+\ points ]] || { show_run; fail "bad last line: $last"; }
  [[ "$last" == *"K=3"* ]] || fail "last line does not mention K=3: $last"
  grep -qE '^workload +family +n +avg% +max% +worst$' <<<"$output" || { show_run; fail "no workload table"; }
  local name
  while read -r name; do
    grep -qE "^$name +[A-Za-z]" <<<"$output" || { show_run; fail "no row for workload $name"; }
  done < <(jq -r '.workloads[].name' "$MORPH_ARTIFACT_SPEC")
  grep -qE '^feasibility: .* agrees with [0-9]+ of [0-9]+ trace rows$' <<<"$output" || { show_run; fail "no feasibility line"; }
}

@test "validate --json: more than 400 points with an average error within issue 11's 10% (docs/validation.md: 9.18%)" {
  require_artifact
  require_jq
  morph --json validate --artifact "$ARTIFACT"
  assert_ok
  local f
  f=$(save_json validate)
  jq_true "$f" '.points > 400 and .avg_error <= 0.10 and .avg_error >= 0 and .max_error >= .avg_error'
  jq_true "$f" '.extra_rows == 3 and .in_sample == false'
  jq_true "$f" '.overall | test("^overall: avg [0-9.]+% max [0-9.]+% over [0-9]+ points")'
  jq_true "$f" '[.workloads[].name] == $spec[0]' --slurpfile spec <(jq '[.workloads[].name]' "$MORPH_ARTIFACT_SPEC")
  jq_true "$f" '([.families[].points] | add) == .points'
}

@test "validate --extra 0 fits on the profiles alone" {
  require_artifact
  morph validate --artifact "$ARTIFACT" --extra 0
  assert_ok
  local last=${lines[${#lines[@]} - 1]}
  [[ "$last" =~ ^overall:\ avg\ [0-9.]+%\ max\ [0-9.]+%\ over\ [0-9]+\ points ]] || { show_run; fail "bad last line: $last"; }
  [[ "$last" == *"K=0"* ]] || fail "last line does not mention K=0: $last"
  [[ "$last" != *"recommended"* ]] || fail "K=0 is not the recommended K: $last"
}

@test "validate --paper-scope: models under 1B parameters only on one node, larger ones everywhere" {
  require_artifact
  require_jq
  morph --json validate --artifact "$ARTIFACT" --paper-scope
  assert_ok
  local f
  f=$(save_json validate-paper)
  jq_true "$f" '.paper_scope == true and .points > 200 and .points < 471'
  jq_true "$f" '.overall | test("the paper.s scope")'
  jq_true "$f" '([.workloads[].rows[] | select(.scored)] | length) == .points'
  # Scored and fitted rows of ViT, RoBERTa and BERT sit on one node (a one-digit placement).
  jq_true "$f" '[.workloads[] | select(.name == "vit" or .name == "roberta" or .name == "bert") | .rows[]
                 | select(.scored or .used_for_fit) | .placement | length] | all(. == 1)'
  jq_true "$f" '[.workloads[] | select(.name == "t5") | .rows[] | select(.scored) | .placement | length] | any(. > 1)'
  morph validate --artifact "$ARTIFACT" --paper-scope --online
  assert_morph_error --online --paper-scope
}

@test "validate --random-rows: the rule's rows against random draws of as many" {
  require_artifact
  require_jq
  morph --json validate --artifact "$ARTIFACT" --random-rows 3
  assert_ok
  local f
  f=$(save_json validate-random)
  jq_true "$f" '.draws == 3 and .extra_rows == 3'
  jq_true "$f" '[.workloads[].name] == ($spec[0] + ["overall"])' --slurpfile spec <(jq '[.workloads[].name]' "$MORPH_ARTIFACT_SPEC")
  jq_true "$f" '[.workloads[].random_avg_errors | length == 3 and . == sort and all(. > 0)] | all'
  # The rule's figure is the plain run's.
  morph --json validate --artifact "$ARTIFACT"
  assert_ok
  local rule
  rule=$(save_json validate-rule)
  jq_true "$f" '(.workloads[-1].rule_avg_error - $rule[0].avg_error) | fabs < 1e-12' --slurpfile rule "$rule"
  jq_true "$f" '.summary | test("^random rows: draws=3 K=3 median=[0-9.]+% p10=[0-9.]+% p90=[0-9.]+% rule=[0-9.]+% rule_better_than=[0-9]+%$")'
  # Other seeds draw other rows: the three draws do not all score alike.
  jq_true "$f" '.workloads[-1].random_avg_errors | unique | length > 1'
  morph validate --artifact "$ARTIFACT" --random-rows 2 --extra 0
  assert_morph_error --random-rows --extra
  morph validate --artifact "$ARTIFACT" --random-rows 2 --online
  assert_morph_error --random-rows --online
}

@test "validate: a folder that is not the artifact" {
  morph validate --artifact "$BATS_TEST_TMPDIR"
  assert_morph_error "$BATS_TEST_TMPDIR" 'not a Morphling artifact'
}

@test "validate: a corrupt trace names the file and line" {
  require_artifact
  local copy="$BATS_TEST_TMPDIR/artifact"
  mkdir "$copy"
  cp -r "$ARTIFACT/profile" "$ARTIFACT/traces" "$copy/"
  chmod -R u+w "$copy"
  echo 'ga,11' >>"$copy/traces/bert/placements.csv"
  local line
  line=$(wc -l <"$copy/traces/bert/placements.csv")
  morph validate --artifact "$copy"
  assert_morph_error "$copy/traces/bert/placements.csv:$line:" fields
}

# ---------------------------------------------------------------------------------------
# curve: resource-sensitivity curves on a cluster file
# ---------------------------------------------------------------------------------------

@test "curve: one row per GPU count 1..16 with a non-decreasing envelope" {
  local cluster
  cluster=$(write_cluster)
  morph curve --model gpt2-1.5b --batch 64 --cluster "$cluster"
  assert_ok
  [[ "${lines[0]}" == "gpt2-1.5b with global batch 64 on dgx-a100 nodes (a100-80g, 8 GPUs each): gpu curve" ]] \
    || { show_run; fail "bad title"; }
  local rows
  rows=$(awk '/^gpus +allocation/ { t = 1; next } t && NF == 0 { exit } t { print $1, $(NF - 1), $NF }' <<<"$output")
  [ "$(cut -d' ' -f1 <<<"$rows" | tr '\n' ' ')" = "$(seq -s' ' 1 16) " ] || { show_run; fail "GPU counts are not 1..16"; }
  awk 'NR > 1 && $3 < prev { bad = 1 } $2 > $3 + 0.005 { bad = 1 } { prev = $3 } END { exit bad }' <<<"$rows" \
    || { show_run; fail "the envelope decreases or falls below the throughput"; }
  grep -qE '^16 +2x8xa100-80g +dp=' <<<"$output" || { show_run; fail "16 GPUs should be 2x8xa100-80g with a plan"; }
}

@test "curve without --perf estimates the forward time at --config's ComputeEfficiency, as plan does" {
  local cluster conf
  cluster=$(write_cluster)
  conf="$BATS_TEST_TMPDIR/efficiency.conf"
  sed 's/^ComputeEfficiency=.*/ComputeEfficiency=0.2/' "$MORPH_SRCDIR/etc/morph.conf" >"$conf"
  morph --config "$conf" curve --model gpt2-1.5b --batch 64 --cluster "$cluster" --max-gpus 1
  assert_ok
  [[ $output == *"forward from FLOPs at 20% of a100-80g peak"* ]] || { show_run; fail "not --config's efficiency"; }
  morph --config "$conf" plan --model gpt2-1.5b --batch 64 --gpus 1xa100
  assert_ok
  [[ $output == *"at 20% of a100-80g peak"* ]] || { show_run; fail "plan: not --config's efficiency"; }
}

@test "curve --json: 16 points with a non-decreasing envelope" {
  require_jq
  local cluster
  cluster=$(write_cluster)
  morph --json curve --model gpt2-1.5b --batch 64 --cluster "$cluster"
  assert_ok
  local f
  f=$(save_json curve)
  jq_true "$f" 'length == 1 and .[0].node_type == "dgx-a100" and .[0].gpu == "a100-80g" and .[0].resource == "gpu"'
  jq_true "$f" '(.[0].points | length) == 16 and [.[0].points[].gpus] == [range(1; 17)]'
  jq_true "$f" '[.[0].points[].envelope_samples_per_s] as $e | all(range(1; $e | length); $e[.] >= $e[. - 1])'
  jq_true "$f" 'all(.[0].points[]; .envelope_samples_per_s >= .throughput_samples_per_s)'
  jq_true "$f" 'all(.[0].points[] | select(.best); (.best.plan | .dp * .tp * .pp) == .gpus)'
}

@test "curve --resource cpu --gpus 8: a CPU curve on one node" {
  local cluster
  cluster=$(write_cluster)
  morph curve --model gpt2-1.5b --batch 64 --cluster "$cluster" --resource cpu --gpus 8
  assert_ok
  [[ "${lines[0]}" == *": cpu curve" ]] || { show_run; fail "not a CPU curve"; }
  grep -qE '^cpus +allocation +best plan' <<<"$output" || { show_run; fail "no cpus column"; }
  local rows
  rows=$(awk '/^cpus +allocation/ { t = 1; next } t && NF == 0 { exit } t { print $1, $2 }' <<<"$output")
  [ -n "$rows" ] || { show_run; fail "no rows"; }
  awk '$2 != "8xa100-80g" { bad = 1 } NR > 1 && $1 <= prev { bad = 1 } { prev = $1 } END { exit bad }' <<<"$rows" \
    || { show_run; fail "CPU counts must rise on an 8xa100-80g allocation"; }
}

@test "curve --resource cpu: more GPUs than the cluster has" {
  local cluster
  cluster=$(write_cluster)
  morph curve --model gpt2-1.5b --batch 64 --cluster "$cluster" --resource cpu --gpus 32
  assert_morph_error --gpus 32 a100-80g
}

@test "curve: a cluster without nodes of the requested --gpu-type" {
  local cluster
  cluster=$(write_cluster with-v100-types)
  morph curve --model gpt2-1.5b --batch 64 --cluster "$cluster" --gpu-type v100-32g
  assert_morph_error --cluster "$cluster" 'no nodes'
  # The type that does have nodes still works.
  morph curve --model gpt2-1.5b --batch 64 --cluster "$cluster" --gpu-type a100
  assert_ok
}

@test "curve: a --gpu-type the cluster file does not define" {
  local cluster
  cluster=$(write_cluster)
  morph curve --model gpt2-1.5b --batch 64 --cluster "$cluster" --gpu-type nosuchgpu
  assert_morph_error --gpu-type "'nosuchgpu'" "$cluster"
}

@test "curve: an empty cluster file does not claim a GPU type was requested" {
  local cluster="$BATS_TEST_TMPDIR/empty.conf"
  : >"$cluster"
  morph curve --model gpt2-1.5b --batch 64 --cluster "$cluster"
  assert_morph_error --cluster "$cluster"
  [[ "$stderr" != *"requested"* ]] || fail "misleading message"
}

@test "curve: a cluster file that does not exist" {
  morph curve --model gpt2-1.5b --batch 64 --cluster "$BATS_TEST_TMPDIR/none.conf"
  assert_morph_error "$BATS_TEST_TMPDIR/none.conf" 'no such file'
}

@test "morph plan on two GPU types adds JABAS's heterogeneous plan: more steps on the faster GPUs, a record's groups" {
  morph plan --model bert-336m --batch 256 --gpus 1x4xa100+1x4xv100 --top 1
  [ "$status" -eq 0 ] || fail "$output"
  local line
  line=$(grep '^heterogeneous data parallelism (JABAS): local batch ' <<<"$output") || fail "$output"
  [[ $line =~ a100-80g\ GA\ ([0-9]+).*v100-32g\ GA\ ([0-9]+).*,\ ([0-9.]+)\ samples/s ]] || fail "$line"
  ((BASH_REMATCH[1] > BASH_REMATCH[2])) || fail "$line"
  # Faster than the best plan that splits the batch evenly (at the V100s' pace).
  local even
  even=$(awk '$1 == "1" { print $NF }' <<<"$output")
  awk -v h="${BASH_REMATCH[3]}" -v e="$even" 'BEGIN { exit !(h > e) }' || fail "$output"
  grep -qE '^  record: dp=8 tp=1 pp=1 .* groups=a100-80g:nodes=1:workers=1:ga=[0-9]+,v100-32g:nodes=1:workers=1:ga=[0-9]+$' <<<"$output" ||
    fail "$output"
  morph --json plan --model bert-336m --batch 256 --gpus 1x8xa100+1x4xv100
  [ "$status" -eq 0 ] || fail "$output"
  [[ $output == *'"reason": "the nodes hold different GPU counts'* ]] || fail "$output"
  morph plan --model bert-336m --batch 256 --gpus 2x4xa100
  [[ $output != *"heterogeneous"* ]] || fail "$output"
}
