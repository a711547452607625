#!/usr/bin/env bats
# morphrun outside Slurm (--plan and --hosts): the rank environment, the framework
# renderings, the checkpoint it resumes from, signals, exit codes, metrics, and every
# refusal before anything starts. Under srun on the local cluster: tests/cluster/launcher.bats.

bats_require_minimum_version 1.5.0
load common

setup_file() {
  : "${MORPH_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
  : "${MORPH_BUILDDIR:=$MORPH_SRCDIR/build}"
  [ -x "$MORPH_BUILDDIR/launcher/morphrun" ] || export MORPHRUN_SKIP="morphrun was not built (configure found no Slurm, Open MPI or hwloc)"
}

setup() {
  [ -z "${MORPHRUN_SKIP:-}" ] || skip "$MORPHRUN_SKIP"
  : "${MORPH_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
  : "${MORPH_BUILDDIR:=$MORPH_SRCDIR/build}"
  MORPHRUN="$MORPH_BUILDDIR/launcher/morphrun"
  export MORPH_FRAMEWORKS="$MORPH_SRCDIR/share/frameworks" MORPH_CONF="$MORPH_SRCDIR/etc/morph.conf"
  unset MORPH_RECORD MORPH_PLAN_ERROR SLURM_JOB_ID SLURM_STEP_ID
  W=$BATS_TEST_TMPDIR
}

# value NAME: from `run` output of "NAME=VALUE" lines
rank_line() { grep -E "^rank=$1 " <<<"$output"; }

# A Morph record: gpt2-1.5b, batch 16, one node of 4 a100-80g, dp=4 mbs=4 (model, nodes, GPU type).
record() {
  echo "morph:v1 model=${1:-gpt2-1.5b} batch=16 seq=1024 sla=best-effort sla_given=0 framework=megatron plans=all" \
    "gpus=1-0 gpu_types=- base_plan=- type=${3:-a100-80g} nodes=${2:-1} gpus_per_node=4 cpus_per_gpu=4 dp=$((4 * ${2:-1}))" \
    "tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=$((4 / ${2:-1})) iter_ms=100.000"
}

@test "morphrun --help names its options; no command is a usage error" {
  run "$MORPHRUN" --help
  [ "$status" -eq 0 ]
  for option in --framework --plan --hosts --per-node --checkpoint --metrics --driver --mpi-trainer; do
    [[ $output == *"$option"* ]] || fail "--help lacks $option"
  done
  run "$MORPHRUN" --plan dp=2
  [ "$status" -eq 78 ] && [[ $output == *"command is required"* ]] || fail "$status $output"
}

@test "every rank of a node gets RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK, MASTER_*, its GPU and plan coordinates" {
  run "$MORPHRUN" --plan dp=2,tp=2 --hosts n1,n2 --node-rank 1 -- sh -c \
    'echo "rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE lws=$LOCAL_WORLD_SIZE group=$GROUP_RANK addr=$MASTER_ADDR port=$MASTER_PORT gpu=$CUDA_VISIBLE_DEVICES omp=$OMP_NUM_THREADS dp=$MORPH_DP_RANK tp=$MORPH_TP_RANK plan=$MORPH_DP/$MORPH_TP"'
  [ "$status" -eq 0 ]
  [ "$(grep -c '^rank=' <<<"$output")" -eq 2 ]
  [[ $(rank_line 2) == "rank=2 local=0 world=4 lws=2 group=1 addr=n1 port=20000 gpu=0 omp="*" dp=1 tp=0 plan=2/2" ]] || fail "$output"
  [[ $(rank_line 3) == "rank=3 local=1 world=4 lws=2 group=1 addr=n1 port=20000 gpu=1 omp="*" dp=1 tp=1 plan=2/2" ]] || fail "$output"
}

@test "refusals come before anything starts, one line each, exit 78" {
  touch_cmd=(-- touch "$W/started")
  run "$MORPHRUN" "${touch_cmd[@]}"
  [ "$status" -eq 78 ] && [[ $output == *"missing plan"* ]] || fail "$output"
  run "$MORPHRUN" --plan dp=2 --framework caffe "${touch_cmd[@]}"
  [ "$status" -eq 78 ] && [[ $output == *"unknown framework 'caffe'"*"deepspeed, megatron, torch"* ]] || fail "$output"
  run "$MORPHRUN" --plan dp=3 --hosts a,b "${touch_cmd[@]}"
  [ "$status" -eq 78 ] && [[ $output == *"3 GPUs do not split evenly over the 2 hosts"* ]] || fail "$output"
  # The record (2 nodes of 4) against an allocation of one host.
  MORPH_RECORD=$(record gpt2-1.5b 2) run "$MORPHRUN" --hosts a "${touch_cmd[@]}"
  [ "$status" -eq 78 ] && [[ $output == *"2 nodes x 4 a100-80g"*"does not match the allocation"* ]] || fail "$output"
  MORPH_RECORD=$(record) run "$MORPHRUN" --plan dp=2,tp=2 --hosts a "${touch_cmd[@]}"
  [ "$status" -eq 78 ] && [[ $output == *"disagrees with the job's record"* ]] || fail "$output"
  MORPH_PLAN_ERROR="morph: job 7: its AdminComment holds no Morph plan" run "$MORPHRUN" --plan dp=1 "${touch_cmd[@]}"
  [ "$status" -eq 78 ] && [[ $output == *"holds no Morph plan"* ]] || fail "$output"
  [ "$(wc -l <<<"$output")" -eq 1 ]
  [ ! -e "$W/started" ]
}

@test "a checkpoint of another model is refused; one in another layout is resharded beside it" {
  "$MORPH_BUILDDIR/tests/cli/make_checkpoint" "$W/ckpt/step_7" dp=1 || fail "make_checkpoint"
  jq '.trainer.morph_model = "llama2-7b"' "$W/ckpt/step_7/index.json" >"$W/index" && mv "$W/index" "$W/ckpt/step_7/index.json"
  MORPH_RECORD=$(record) run "$MORPHRUN" --hosts a --checkpoint "$W/ckpt" -- touch "$W/started"
  [ "$status" -eq 78 ] && [[ $output == *"is of model llama2-7b, the job trains gpt2-1.5b"* ]] || fail "$output"
  [ ! -e "$W/started" ]
  MORPH_RECORD=$(record llama2-7b) run "$MORPHRUN" --hosts a --checkpoint "$W/ckpt" -- sh -c 'echo "load=$MORPH_CHECKPOINT save=$MORPH_CHECKPOINT_DIR"'
  [ "$status" -eq 0 ] || fail "$output"
  [[ $output == *"load=$W/ckpt/step_7.dp4-tp1-pp1-z0 save=$W/ckpt"* ]] || fail "$output"
  jq -e '.layout.dp == 4' "$W/ckpt/step_7.dp4-tp1-pp1-z0/index.json" >/dev/null
  jq -e '.layout.dp == 1' "$W/ckpt/step_7/index.json" >/dev/null  # the old one is untouched
  # The next start finds the resharded copy and reshards nothing.
  MORPH_RECORD=$(record llama2-7b) run "$MORPHRUN" --hosts a --checkpoint "$W/ckpt" -- sh -c 'echo "load=$MORPH_CHECKPOINT"'
  [[ $output != *resharded* && $output == *"load=$W/ckpt/step_7.dp4-tp1-pp1-z0"* ]] || fail "$output"
  # On several hosts each morphrun would write the copy: a reshard to make first.
  MORPH_RECORD=$(record llama2-7b 2) run "$MORPHRUN" --hosts a,b --node-rank 1 --checkpoint "$W/ckpt" -- touch "$W/started"
  [ "$status" -eq 78 ] && [[ $output == *"with --hosts on 2 hosts each would reshard it: run morph reshard --from $W/ckpt/step_7"*"--layout dp=8,tp=1,pp=1,zero=0 once first"* ]] || fail "$output"
  [ ! -e "$W/started" ]
}

@test "a task resumes from the checkpoint morphrun --driver chose for the step, not from its own listing of the folder" {
  local s
  for s in 5 7; do
    "$MORPH_BUILDDIR/tests/cli/make_checkpoint" "$W/ckpt/step_$s" dp=2 || fail "make_checkpoint"
    jq ".progress.step = $s" "$W/ckpt/step_$s/index.json" >"$W/index" && mv "$W/index" "$W/ckpt/step_$s/index.json"
  done
  run "$MORPHRUN" --plan dp=2 --checkpoint "$W/ckpt" -- sh -c 'echo "load=$MORPH_CHECKPOINT"'
  [ "$status" -eq 0 ] && [ "$(grep -c "load=$W/ckpt/step_7$" <<<"$output")" -eq 2 ] || fail "$output"
  # The driver saw step_5 only (NFS: its node's cached listing): every task takes that one.
  MORPH_CHECKPOINT_CHOICE=$W/ckpt/step_5 run "$MORPHRUN" --plan dp=2 --checkpoint "$W/ckpt" -- sh -c 'echo "load=$MORPH_CHECKPOINT"'
  [ "$status" -eq 0 ] && [ "$(grep -c "load=$W/ckpt/step_5$" <<<"$output")" -eq 2 ] || fail "$output"
  # It saw none: a fresh start for every task.
  MORPH_CHECKPOINT_CHOICE= run "$MORPHRUN" --plan dp=2 --checkpoint "$W/ckpt" -- sh -c 'echo "load=${MORPH_CHECKPOINT-none}"'
  [ "$status" -eq 0 ] && [ "$(grep -c "load=none$" <<<"$output")" -eq 2 ] || fail "$output"
  # One this task cannot read (not there yet) or in another layout: nothing starts.
  MORPH_CHECKPOINT_CHOICE=$W/ckpt/step_9 run "$MORPHRUN" --plan dp=2 --checkpoint "$W/ckpt" -- touch "$W/started"
  [ "$status" -eq 78 ] && [[ $output == *"MORPH_CHECKPOINT_CHOICE=$W/ckpt/step_9: not a committed checkpoint here"* ]] || fail "$output"
  MORPH_CHECKPOINT_CHOICE=$W/ckpt/step_5 run "$MORPHRUN" --plan dp=4 --checkpoint "$W/ckpt" -- touch "$W/started"
  [ "$status" -eq 78 ] && [[ $output == *"the checkpoint is in layout dp=2,tp=1,pp=1,zero=0, the plan needs dp=4"* ]] || fail "$output"
  [ ! -e "$W/started" ]
}

@test "on a terminal (srun --pty) the first trainer reads it, the others read nothing, none stops" {
  # A trainer in a process group of its own stopped (SIGTTIN) at its first read of the
  # terminal, and morphrun waited for ever. script(1) gives morphrun a terminal.
  command -v script >/dev/null || skip "no script(1) (bsdutils) to give morphrun a terminal"
  run timeout 30 script -qec "$MORPHRUN --plan dp=2 -- sh -c 'read x; echo rank\$RANK-got-\$x'" /dev/null <<<"hello"
  [ "$status" -eq 0 ] || fail "status $status (124: a trainer stopped on the terminal): $output"
  [[ $output == *"rank0-got-hello"* ]] || fail "$output"
  [[ $output == *"rank1-got-"* && $output != *"rank1-got-hello"* ]] || fail "$output"
}

@test "the checkpoint signal reaches every rank, morphrun waits for the save and exits 75" {
  "$MORPHRUN" --plan dp=2 -- sh -c 'trap "echo saved-$RANK >>'"$W"'/saves; exit 0" USR2; echo "1 0.1 8" >"$MORPH_METRICS"; touch '"$W"'/up-$RANK; while :; do sleep 0.05; done' &
  local pid=$!
  for _ in $(seq 100); do [ -e "$W/up-0" ] && [ -e "$W/up-1" ] && break; sleep 0.05; done
  kill -USR2 "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 75 ]
  [ "$(sort "$W/saves" | tr '\n' ' ')" = "saved-0 saved-1 " ]
}

@test "under the driver, the save request file reaches every ready rank as the checkpoint signal; its helpers get none" {
  # morphrun --driver creates MORPH_SAVE_REQUEST rather than signalling the step (save_request.h).
  MORPH_SAVE_REQUEST="$W/request" "$MORPHRUN" --plan dp=2 -- sh -c '(trap "echo helper-$RANK >>'"$W"'/saves" USR2;
    while kill -0 $$ 2>/dev/null; do sleep 0.05; done) </dev/null >/dev/null 2>&1 &
    trap "echo saved-$RANK >>'"$W"'/saves; exit 0" USR2; echo "1 0.1 8" >"$MORPH_METRICS"; touch '"$W"'/up-$RANK;
    while :; do sleep 0.05; done' &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -e "$W/up-0" ] && [ -e "$W/up-1" ] && break; sleep 0.05; done
  sleep 1.5
  [ ! -e "$W/saves" ] # no request, no save
  touch "$W/request"
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    wait "$pid" || true
    fail "morphrun did not take the request within 10 s"
  fi
  wait "$pid" || rc=$?
  [ "$rc" -eq 75 ]
  [ "$(sort "$W/saves" | tr '\n' ' ')" = "saved-0 saved-1 " ]
}

@test "SIGTERM ends the trainers and what they started; a crashed rank ends the others with its code" {
  "$MORPHRUN" --plan dp=2 -- sh -c 'sleep 313.37 & touch '"$W"'/up-$RANK; wait' &
  local pid=$!
  for _ in $(seq 100); do [ -e "$W/up-0" ] && [ -e "$W/up-1" ] && break; sleep 0.05; done
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 143 ]
  sleep 0.2
  run pgrep -f "sleep 313[.]37"
  [ "$status" -eq 1 ] || fail "orphans (pgrep $status): $output"  # 1: none; 127 would be no pgrep
  run timeout 20 "$MORPHRUN" --plan dp=2 -- sh -c 'if [ "$RANK" = 1 ]; then exit 5; fi; sleep 317.29'
  [ "$status" -eq 5 ] && [[ $output == *"exited with 5"* ]] || fail "$status $output"
  run pgrep -f "sleep 317[.]29"
  [ "$status" -eq 1 ] || fail "orphans (pgrep $status): $output"
}

@test "started with SIGCHLD and SIGTERM ignored (as some wrappers do), morphrun still sees its trainers end and SIGTERM" {
  local ignoring='import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])'
  run timeout 20 /usr/bin/python3 -c "$ignoring" "$MORPHRUN" --plan dp=1 -- sh -c 'exit 3'
  [ "$status" -eq 3 ] || fail "$status (124: morphrun never saw its trainer end) $output"
  /usr/bin/python3 -c "$ignoring" "$MORPHRUN" --plan dp=1 -- sh -c 'touch '"$W"'/up; sleep 331.7' &
  local pid=$!
  for _ in $(seq 100); do [ -e "$W/up" ] && break; sleep 0.05; done
  kill -TERM "$pid"
  local rc=0
  timeout 20 tail --pid="$pid" -f /dev/null || rc=$?
  [ "$rc" -eq 0 ] || { kill -KILL "$pid"; fail "SIGTERM was ignored"; }
  wait "$pid" || rc=$?
  [ "$rc" -eq 143 ] || fail "exit $rc"
}

@test "--driver refuses a metrics file it cannot read its steps' ends back from, before anything starts" {
  SLURM_JOB_ID=7 run "$MORPHRUN" --driver --metrics /dev/null -- true
  [ "$status" -eq 78 ] && [[ $output == *"--metrics /dev/null: not a regular file"* ]] || fail "$status $output"
  SLURM_JOB_ID=7 run "$MORPHRUN" --driver --metrics "$W/no/such/folder/m" -- true
  [ "$status" -eq 78 ] && [[ $output == *"/no/such/folder/m: cannot be written (No such file or directory)"* ]] ||
    fail "$status $output"
}

@test "rank 0's metrics lines reach the job's metrics file with the time and layout; a bad line is reported once" {
  run "$MORPHRUN" --plan dp=2,zero=1 --metrics "$W/metrics" -- sh -c \
    'printf "1 0.5 32 3.25\n2 0.25 32\nnot a line\nworse\n" >"$MORPH_METRICS"'
  [ "$status" -eq 0 ]
  [ "$(grep -c 'MORPH_METRICS' <<<"$output")" -eq 1 ] || fail "$output"
  [ "$(wc -l <"$W/metrics")" -eq 2 ]  # rank 1's lines are read and dropped
  run cut -d' ' -f2- "$W/metrics"
  [ "${lines[0]}" = "1 0.5 32 3.25 dp=2,tp=1,pp=1,zero=1" ]
  [ "${lines[1]}" = "2 0.25 32 - dp=2,tp=1,pp=1,zero=1" ]
}

@test "--framework renders Megatron's arguments and DeepSpeed's config for the plan" {
  MORPH_RECORD=$(record) run "$MORPHRUN" --hosts a --framework megatron --checkpoint "$W/ck" -- sh -c \
    'if [ "$RANK" = 0 ]; then printf "%s\n" "$@"; fi' trainer
  [ "$status" -eq 0 ] || fail "$output"
  [[ $(tr '\n' ' ' <<<"$output") == *"--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --micro-batch-size 4 --global-batch-size 16 --seq-length 1024"*"--save $W/ck"* ]] || fail "$output"
  MORPH_RECORD=$(record) run "$MORPHRUN" --hosts a --framework deepspeed -- sh -c \
    '[ "$RANK" = 0 ] || exit 0; while [ "$1" != --deepspeed_config ]; do shift; done; cat "$2"' trainer
  [ "$status" -eq 0 ] || fail "$output"
  jq -e '.train_batch_size == 16 and .train_micro_batch_size_per_gpu == 4 and .gradient_accumulation_steps == 1' <<<"$output" >/dev/null || fail "$output"
  # Without a record, --plan and --seq give what Megatron's rule needs.
  run --separate-stderr "$MORPHRUN" --hosts a --framework megatron --plan dp=1 -- echo
  [ "$status" -eq 78 ] || fail "$output"
  [[ $stderr == *"{seq} has no value: the step has no sequence length (without a Morph record, give morphrun --seq with --plan)"* ]] || fail "$stderr"
  run "$MORPHRUN" --hosts a --framework megatron --plan dp=1,mbs=2 --seq 2048 -- echo
  [ "$status" -eq 0 ] || fail "$output"
  [[ $output == *"--micro-batch-size 2 --global-batch-size 2 --seq-length 2048"* ]] || fail "$output"
  MORPH_RECORD=$(record) run --separate-stderr "$MORPHRUN" --hosts a --framework megatron --plan dp=4,mbs=4 --seq 4096 -- echo
  [ "$status" -eq 78 ] || fail "$output"
  [[ $stderr == *"--seq 4096 is not the job's sequence length, 1024 (its record)"* ]] || fail "$stderr"
  run --separate-stderr "$MORPHRUN" --seq 2048 -- true
  [[ $stderr == *"--seq goes with --plan"* ]] || fail "$stderr"
}

@test "a command line morphrun cannot take starts nothing: 78, as every refusal (it was CLI11's 106 or 109)" {
  run --separate-stderr "$MORPHRUN" --bogus=1 -- true
  [ "$status" -eq 78 ] || fail "status $status: $stderr"
  [ "$stderr" = "morphrun: unknown option --bogus" ] || fail "$stderr"
  run "$MORPHRUN" --plan dp=1
  [ "$status" -eq 78 ] || fail "status $status: $output"
  run "$MORPHRUN" --plan dp=1 --seq 0 -- true
  [ "$status" -eq 78 ] || fail "status $status: $output"
  run "$MORPHRUN" --help
  [ "$status" -eq 0 ] || fail "status $status: $output"
}

@test "on GPUs without bf16 (etc/morph.conf's V100) DeepSpeed trains in fp16 with loss scaling; A100s keep bf16" {
  local show='[ "$RANK" = 0 ] || exit 0; echo "precision=$MORPH_PRECISION"; printf "%s\n" "$@" | grep -x -e --bf16 -e --fp16
    while [ "$1" != --deepspeed_config ]; do shift; done; jq -c "{bf16, fp16}" "$2"'
  MORPH_RECORD=$(record gpt2-1.5b 1 v100-32g) run "$MORPHRUN" --hosts a --framework deepspeed -- sh -c "$show" trainer
  [ "$status" -eq 0 ] || fail "$output"
  [ "$(sed -n 1,2p <<<"$output")" = $'precision=fp16\n--fp16' ] || fail "$output"
  jq -e '.bf16 == null and .fp16.enabled and .fp16.loss_scale == 0' <<<"$(sed -n 3p <<<"$output")" >/dev/null || fail "$output"
  MORPH_RECORD=$(record gpt2-1.5b 1 a100-80g) run "$MORPHRUN" --hosts a --framework deepspeed -- sh -c "$show" trainer
  [ "$status" -eq 0 ] || fail "$output"
  [ "$(sed -n 1,2p <<<"$output")" = $'precision=bf16\n--bf16' ] || fail "$output"
  jq -e '.bf16.enabled and .fp16 == null' <<<"$(sed -n 3p <<<"$output")" >/dev/null || fail "$output"
}

@test "ranks of a node are bound to disjoint CPUs, OMP_NUM_THREADS as many" {
  local cpus
  cpus=$(nproc)
  [ "$cpus" -ge 2 ] || skip "one CPU"
  run "$MORPHRUN" --plan dp=2 -- sh -c 'echo "$RANK $OMP_NUM_THREADS $(taskset -pc $$ | sed "s/.*: //")"'
  [ "$status" -eq 0 ] || fail "$output"
  local a b
  a=$(grep '^0 ' <<<"$output" | cut -d' ' -f3)
  b=$(grep '^1 ' <<<"$output" | cut -d' ' -f3)
  [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] || fail "$output"
  # Each rank's list is disjoint from the other's.
  python3 - "$a" "$b" <<'PY' || fail "$output"
import sys
def cpus(text):
    out = set()
    for part in text.split(','):
        lo, _, hi = part.partition('-')
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out
a, b = cpus(sys.argv[1]), cpus(sys.argv[2])
sys.exit(0 if a and b and not (a & b) else 1)
PY
  [ "$(grep '^0 ' <<<"$output" | cut -d' ' -f2)" -eq "$(( (cpus + 1) / 2 ))" ] || fail "$output"
}

@test "a trainer dies with morphrun even when morphrun is killed with SIGKILL" {
  "$MORPHRUN" --plan dp=1 -- sh -c 'echo $$ >'"$W"'/trainer; exec sleep 302' &
  local pid=$! trainer
  for _ in $(seq 100); do [ -s "$W/trainer" ] && break; sleep 0.05; done
  trainer=$(cat "$W/trainer")
  kill -0 "$trainer"
  kill -KILL "$pid"
  for _ in $(seq 100); do kill -0 "$trainer" 2>/dev/null || break; sleep 0.05; done
  run kill -0 "$trainer"
  [ "$status" -ne 0 ] || fail "the trainer $trainer outlived morphrun"
}

@test "the reference trainer under morphrun runs at the predicted speed of its plan with --emulate-speed" {
  local trainer="$MORPH_BUILDDIR/tests/trainer/morph-trainer"
  [ -x "$trainer" ] || skip "no tests/trainer/morph-trainer (make check builds it)"
  # A one-GPU plan predicted at 2 s per iteration, emulated at 1/20: 0.1 s per step.
  local r
  r=$(record | sed 's/gpus_per_node=4/gpus_per_node=1/; s/ dp=4 / dp=1 /; s/mbs=4/mbs=16/; s/iter_ms=100.000/iter_ms=2000.000/')
  # An MPI singleton (as root, Open MPI wants it said); LeakSanitizer cannot attribute what
  # Open MPI keeps until exit, as in continuity.sh.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  MORPH_RECORD=$r run "$MORPHRUN" --hosts a \
    --framework torch --metrics "$W/metrics" -- "$trainer" --layers 2 --hidden 8 --vocab 20 --vocab-multiple 1 \
    --samples 64 --global-batch 16 --steps 3 --quiet --emulate-speed 0.05
  [ "$status" -eq 0 ] || fail "$output"
  [ "$(wc -l <"$W/metrics")" -eq 3 ]
  awk '$3 < 0.1 || $3 > 0.5 { bad = 1 } END { exit bad }' "$W/metrics" || fail "$(cat "$W/metrics")"
  run "$trainer" --layout dp=1 --emulate-speed 0.05
  [ "$status" -ne 0 ] && [[ $output == *"--emulate-speed needs the job's record"* ]] || fail "$output"
}

@test "the checkpoint signal waits until the trainer reports its first iteration (its handler is in place)" {
  # Before its first metrics line the trainer has no handler: SIGUSR2 would kill it.
  "$MORPHRUN" --plan dp=1 -- sh -c 'touch '"$W"'/up; sleep 1; trap "echo saved >'"$W"'/saved; exit 0" USR2;
    echo "1 0.1 8" >"$MORPH_METRICS"; while :; do sleep 0.05; done' &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -e "$W/up" ] && break; sleep 0.05; done
  kill -USR2 "$pid"
  wait "$pid" || rc=$?
  [ "$rc" -eq 75 ]
  [ "$(cat "$W/saved")" = saved ]
}

@test "a trainer that fails after the checkpoint signal still ends in 75: the last checkpoint stands" {
  "$MORPHRUN" --plan dp=1 -- sh -c 'trap "exit 9" USR2; echo "1 0.1 8" >"$MORPH_METRICS"; touch '"$W"'/up;
    while :; do sleep 0.05; done' &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -e "$W/up" ] && break; sleep 0.05; done
  kill -USR2 "$pid"
  wait "$pid" || rc=$?
  [ "$rc" -eq 75 ]
}

@test "SIGTERM while the trainer saves (srun --kill-on-bad-exit after another rank exited 75): the save goes on, 75" {
  "$MORPHRUN" --plan dp=1 -- sh -c 'trap "sleep 1; echo saved >'"$W"'/saved; exit 0" USR2; echo "1 0.1 8" >"$MORPH_METRICS";
    touch '"$W"'/up; while :; do sleep 0.05; done' 2>"$W/err" &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -e "$W/up" ] && break; sleep 0.05; done
  kill -USR2 "$pid"
  sleep 0.3
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  [ "$(cat "$W/saved" 2>/dev/null)" = saved ] || fail "the save was cut: $(cat "$W/err")"
  [ "$rc" -eq 75 ] || fail "morphrun exited $rc: $(cat "$W/err")"
  grep -q "Terminated received while the trainer saves: the save goes on" "$W/err" || fail "$(cat "$W/err")"
}

@test "a trainer that finishes before the checkpoint signal could reach it ends the job (0), not a requeue" {
  # No metrics line: the signal waits for the trainer to be ready, which finishes first.
  "$MORPHRUN" --plan dp=1 -- sh -c 'touch '"$W"'/up; sleep 2; echo done >'"$W"'/done' &
  local pid=$! rc=0
  for _ in $(seq 100); do [ -e "$W/up" ] && break; sleep 0.05; done
  kill -USR2 "$pid"
  wait "$pid" || rc=$?
  [ "$(cat "$W/done")" = done ] || fail "the trainer was stopped"
  [ "$rc" -eq 0 ] || fail "morphrun exited $rc"
}

# mpi_trainer: sets `trainer` to the reference trainer for mpirun as root (Open MPI wants
# it said; LeakSanitizer cannot attribute what Open MPI keeps until exit), or skips.
mpi_trainer() {
  trainer="$MORPH_BUILDDIR/tests/trainer/morph-trainer"
  [ -x "$trainer" ] || skip "no tests/trainer/morph-trainer (make check builds it)"
  command -v mpirun >/dev/null || skip "no mpirun"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
}

# A heterogeneous Morph record (issue 15): gpt2-1.5b, batch 64, one a100 node and one
# v100 node of 4 GPUs, local batch 4; an a100 accumulates 3 micro-batches, a v100 1.
hetero_record() {
  echo "morph:v1 model=gpt2-1.5b batch=64 seq=1024 sla=best-effort sla_given=0 framework=${2:-torch} plans=all" \
    "gpus=1-0 gpu_types=- base_plan=- type=- nodes=2 gpus_per_node=4 cpus_per_gpu=4 dp=8 tp=1 pp=1 zero=0" \
    "offload=0 gc=0 ga=1 mb=1 mbs=4 iter_ms=100.000" \
    "groups=a100-80g:nodes=1:workers=1:ga=${1:-3},v100-32g:nodes=1:workers=1:ga=1"
}

@test "a heterogeneous record: each node's ranks get their GPU type's MORPH_GA, MORPH_WORKERS and MORPH_LOCAL_BATCH" {
  # morph.conf names the nodes' types (NodeName=); morphrun looks its own node up.
  sed -n '/^GpuType=/p' "$MORPH_SRCDIR/etc/morph.conf" >"$W/morph.conf"
  cat >>"$W/morph.conf" <<'CONF'
NodeType=fast Gpu=a100-80g Gpus=4 Cpus=16 MemoryGiB=256 NetworkBandwidthGBps=25
NodeType=slow Gpu=v100-32g Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25
NodeName=n1 NodeType=fast
NodeName=n2 NodeType=slow
CONF
  export MORPH_CONF="$W/morph.conf" MORPH_RECORD
  MORPH_RECORD=$(hetero_record)
  local show='echo "rank=$RANK ga=$MORPH_GA workers=$MORPH_WORKERS lb=$MORPH_LOCAL_BATCH type=$MORPH_GPU_TYPE groups=$MORPH_GPU_GROUPS"'
  for node in 0 1; do
    run "$MORPHRUN" --hosts n1,n2 --node-rank $node -- sh -c "$show"
    [ "$status" -eq 0 ] || fail "$output"
    [ "$(grep -c '^rank=' <<<"$output")" -eq 4 ] || fail "$output"
  done
  run "$MORPHRUN" --hosts n1,n2 --node-rank 0 -- sh -c "$show"
  [[ $(rank_line 3) == "rank=3 ga=3 workers=1 lb=4 type=a100-80g+v100-32g groups=a100-80g:nodes=1:workers=1:ga=3,v100-32g:nodes=1:workers=1:ga=1" ]] ||
    fail "$output"
  run "$MORPHRUN" --hosts n1,n2 --node-rank 1 -- sh -c "$show"
  [[ $(rank_line 4) == "rank=4 ga=1 workers=1 lb=4 type=a100-80g+v100-32g "* ]] || fail "$output"
  # A node morph.conf does not name, and a record whose groups miss the batch: refused.
  run "$MORPHRUN" --hosts n3,n2 --node-rank 0 -- touch "$W/started"
  [ "$status" -eq 78 ] && [[ $output == *"morph.conf names no GPU type for this node"* ]] || fail "$output"
  MORPH_RECORD=$(hetero_record 2) run "$MORPHRUN" --hosts n1,n2 --node-rank 0 -- touch "$W/started"
  [ "$status" -eq 78 ] && [[ $output == *"groups= process 48 samples per iteration, the batch is 64"* ]] || fail "$output"
  MORPH_RECORD=$(hetero_record 3 megatron) run "$MORPHRUN" --hosts n1,n2 --node-rank 0 -- touch "$W/started"
  [ "$status" -eq 78 ] && [[ $output == *"Megatron-LM gives every data-parallel rank the same number of micro-batches"* ]] ||
    fail "$output"
  [ ! -e "$W/started" ]
}

@test "the reference trainer with --rank-batch: uneven shares per rank give the losses of an even split" {
  local trainer
  mpi_trainer
  local args=(--layout dp=2,tp=1,pp=1,zero=0 --layers 2 --hidden 8 --vocab 20 --vocab-multiple 1 --samples 256
    --global-batch 32 --steps 5)
  run timeout 120 mpirun --oversubscribe -np 2 "$trainer" "${args[@]}" --quiet --loss-log "$W/even"
  [ "$status" -eq 0 ] || fail "$output"
  # Rank 0 (an "a100"): 2 workers x GA 3 x 4 samples; rank 1: 1 x 2 x 4.
  run timeout 120 mpirun --oversubscribe -np 2 sh -c 'export MORPH_LOCAL_BATCH=4 MORPH_WORKERS=1 MORPH_GA=2
    [ "$OMPI_COMM_WORLD_RANK" = 0 ] && export MORPH_WORKERS=2 MORPH_GA=3
    exec "$0" "$@"' "$trainer" "${args[@]}" --rank-batch --loss-log "$W/uneven"
  [ "$status" -eq 0 ] || fail "$output"
  [[ $output == *"rank batches 24,8 "* ]] || fail "$output"
  [ "$(wc -l <"$W/uneven")" -eq 5 ]
  paste "$W/even" "$W/uneven" | awk '{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-12 * $2) bad = 1 } END { exit bad }' ||
    fail "$(paste "$W/even" "$W/uneven")"
  # Shares that miss the global batch are refused on every rank, with one message.
  run timeout 120 mpirun --oversubscribe -np 2 sh -c 'MORPH_LOCAL_BATCH=4 MORPH_WORKERS=1 MORPH_GA=1 exec "$0" "$@"' \
    "$trainer" "${args[@]}" --rank-batch
  [ "$status" -ne 0 ] && [[ $output == *"the data-parallel ranks process 8 samples (4+4), the global batch is 32"* ]] ||
    fail "$output"
  run "$trainer" "${args[@]}" --rank-batch
  [ "$status" -ne 0 ] && [[ $output == *"--rank-batch needs MORPH_LOCAL_BATCH"* ]] || fail "$output"
}

@test "the reference trainer reports gradient similarity every P steps; tensor parallelism does not change it" {
  local trainer
  mpi_trainer
  local args=(--layers 2 --hidden 8 --vocab 20 --vocab-multiple 1 --samples 256 --global-batch 32 --steps 4 --quiet)
  local layout np
  for np in 2 4; do
    layout=dp=2,tp=$((np / 2)),pp=1,zero=$((np / 4))
    run timeout 120 env MORPH_METRICS="$W/$layout" mpirun --oversubscribe -np $np \
      "$trainer" --layout "$layout" "${args[@]}" --similarity-every 2
    [ "$status" -eq 0 ] || fail "$output"
  done
  run timeout 120 mpirun --oversubscribe -np 2 "$trainer" --layout dp=2,tp=1,pp=1,zero=0 "${args[@]}" --loss-log "$W/plain"
  [ "$status" -eq 0 ] || fail "$output"
  local a=$W/dp=2,tp=1,pp=1,zero=0 b=$W/dp=2,tp=2,pp=1,zero=1
  # STEP SECONDS SAMPLES LOSS [SIMILARITY]: steps 2 and 4 carry a cosine in [-1, 1].
  awk '(NR % 2 == 0) != (NF == 5) || (NF == 5 && ($5 < -1 || $5 > 1)) { bad = 1 } END { exit bad || NR != 4 }' "$a" ||
    fail "$(cat "$a")"
  paste "$a" "$b" | awk '$2 == "" { next } { d = $5 - $10; if (d < 0) d = -d; if (NF == 10 && d > 1e-9) bad = 1 } END { exit bad }' ||
    fail "$(paste "$a" "$b")"
  # Splitting a step into halves changes no loss beyond rounding.
  paste "$a" "$W/plain" | awk '{ n = NF; d = ($4 - $(n)) / $4; if (d < 0) d = -d; if (d > 1e-12) bad = 1 } END { exit bad }' ||
    fail "$(paste "$a" "$W/plain")"
}

@test "the reference trainer with --adaptive-batch follows JABAS's rule on its own similarities" {
  local trainer
  mpi_trainer
  local args=(--layout dp=2,tp=1,pp=1,zero=0 --layers 2 --hidden 8 --vocab 20 --vocab-multiple 1 --samples 256
    --global-batch 32 --steps 8)
  run timeout 120 env MORPH_METRICS="$W/m" mpirun --oversubscribe -np 2 "$trainer" "${args[@]}" --similarity-every 1 \
    --adaptive-batch 16:36 --similarity-target 0.3
  [ "$status" -eq 0 ] || fail "$output"
  [ "$(wc -l <"$W/m")" -eq 8 ]
  # SAMPLES of step k+1 is the rule applied to step k's batch and similarity: x1.1 below
  # gamma, x0.9 above, to the nearest sample but at least one away, within 16..36.
  awk 'NR > 1 && $3 != want { bad = 1; print "step " $1 ": " $3 " samples, the rule says " want }
       { b = $3; s = $5; n = b; if (s < 0.3) n = int(b * 1.1 + 0.5); else if (s > 0.3) n = int(b * 0.9 + 0.5)
         if (n == b && s < 0.3) n = b + 1; if (n == b && s > 0.3) n = b - 1
         if (n < 16) n = 16; if (n > 36) n = 36; want = n; if (n != b) moved++ }
       END { exit bad || !moved }' "$W/m" || fail "$(cat "$W/m")"
  grep -q "global batch 32 -> " <<<"$output" || fail "$output"
  run "$trainer" "${args[@]}" --adaptive-batch 16:64
  [ "$status" -ne 0 ] && [[ $output == *"--adaptive-batch needs --similarity-every P"* ]] || fail "$output"
  run "$trainer" "${args[@]}" --adaptive-batch 64:128 --similarity-every 1
  [ "$status" -ne 0 ] && [[ $output == *"--global-batch 32 is outside --adaptive-batch 64:128"* ]] || fail "$output"
}

@test "an adaptive run resumed from its checkpoint goes on at the batch it reached, as if never stopped" {
  local trainer
  mpi_trainer
  local args=(--layout dp=2,tp=1,pp=1,zero=0 --layers 2 --hidden 8 --vocab 20 --vocab-multiple 1 --samples 256
    --global-batch 32 --similarity-every 1 --adaptive-batch 16:36 --similarity-target 0.3)
  run timeout 120 env MORPH_METRICS="$W/whole.m" mpirun --oversubscribe -np 2 "$trainer" "${args[@]}" --steps 8 \
    --loss-log "$W/whole.loss"
  [ "$status" -eq 0 ] || fail "$output"
  run timeout 120 env MORPH_METRICS="$W/first.m" mpirun --oversubscribe -np 2 "$trainer" "${args[@]}" --steps 8 \
    --save-at 4 --checkpoint-dir "$W/ckpt" --loss-log "$W/split.loss"
  [ "$status" -eq 0 ] || fail "$output"
  jq -e '.trainer.adaptive | .min_batch == 16 and .max_batch == 36 and .iteration == 4' "$W/ckpt/step_4/index.json" \
    >/dev/null || fail "$(cat "$W/ckpt/step_4/index.json")"
  run timeout 120 env MORPH_METRICS="$W/second.m" mpirun --oversubscribe -np 2 "$trainer" "${args[@]}" --steps 8 \
    --resume "$W/ckpt/step_4" --loss-log "$W/split.loss"
  [ "$status" -eq 0 ] || fail "$output"
  grep -q "adaptive batch resumed at $(awk 'NR == 5 { print $3 }' "$W/whole.m")" <<<"$output" || fail "$output"
  # The same batches (SAMPLES) and losses, step by step.
  cmp <(cut -d' ' -f1,3 "$W/whole.m") <(cat "$W/first.m" "$W/second.m" | cut -d' ' -f1,3) ||
    fail "$(paste "$W/whole.m" <(cat "$W/first.m" "$W/second.m"))"
  paste "$W/whole.loss" "$W/split.loss" | awk '$1 != $3 || $2 != $4 { bad = 1 } END { exit bad || NR != 8 }' ||
    fail "$(paste "$W/whole.loss" "$W/split.loss")"
  # Its checkpoint holds a batch this run must adapt within the same bounds.
  run timeout 120 mpirun --oversubscribe -np 2 "$trainer" "${args[@]/16:36/16:64}" --steps 8 --resume "$W/ckpt/step_4"
  [ "$status" -ne 0 ] && [[ $output == *"adapted its batch within 16:36, this run within 16:64"* ]] || fail "$output"
}

@test "a job's MORPH_ADAPTIVE_BATCH turns adaptive batching on, a similarity every 10 steps" {
  local trainer
  mpi_trainer
  run timeout 120 env MORPH_METRICS="$W/m" MORPH_ADAPTIVE_BATCH=16:64 mpirun --oversubscribe -np 1 "$trainer" \
    --layout dp=1,tp=1,pp=1,zero=0 --layers 2 --hidden 8 --vocab 20 --vocab-multiple 1 --samples 256 \
    --global-batch 32 --steps 11
  [ "$status" -eq 0 ] || fail "$output"
  # STEP SECONDS SAMPLES LOSS [SIMILARITY]: a similarity at step 10 only, and the batch moves after it.
  awk '(NF == 5) != ($1 == 10) { bad = 1 } $1 <= 10 && $3 != 32 { bad = 1 } $1 == 11 && $3 == 32 { bad = 1 }
       END { exit bad || NR != 11 }' "$W/m" || fail "$(cat "$W/m")"
}
