# Following and steering one Morph job on the test cluster, for the scripts that change a
# running job's plan as morphd does (tests/launcher/check_launcher.sh,
# tests/torch/check_torch.sh). Sourced; the script defines die() and $work, where each
# job writes $work/JOB.out. The cluster's bats files have it through cluster.bash.

# shellcheck disable=SC2154  # $work is the sourcing script's

# job_field JOB KEY: one field of `scontrol show job`.
job_field() { scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s|^$2=||p" | head -n 1; }

# job_record JOB: the Morph record in the job's AdminComment.
job_record() { scontrol show job "$1" | sed -n 's/^ *AdminComment=//p' | sed 's/ *$//'; }

# record_value JOB KEY: one key of the Morph record.
record_value() { job_record "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# job_story JOB: what the job did, for a failure's message: its state, reason, node list,
# restarts and the end of its output.
job_story() {
  scontrol show job -o "$1" 2>&1 | tr ' ' '\n' |
    grep -E '^(JobState|Reason|NodeList|NumNodes|Restarts|ExitCode|RunTime)=' | paste -sd' ' - >&2 || true
  tail -n 40 "$work/$1.out" >&2 2>/dev/null || true
}

# wait_state JOB STATE [SECONDS]: 1, with the job's last output, when it ends otherwise.
wait_state() {
  local _ state
  for _ in $(seq $((${3:-120} * 5))); do
    state=$(job_field "$1" JobState)
    [[ $state == "$2" ]] && return 0
    case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
      echo "job $1 ended $state, expected $2" >&2; job_story "$1"; return 1 ;;
    esac
    sleep 0.2
  done
  job_story "$1"
  die "job $1 is $state after ${3:-120} s, expected $2"
}

# steps_done METRICS: the steps a job has done, from its metrics file.
steps_done() { grep -v '^#' "$1" 2>/dev/null | tail -n 1 | cut -d' ' -f2; }

# wait_step METRICS STEP [SECONDS] [JOB]: with JOB, an end of the job fails at once; a
# failure tells JOB's story and the metrics' end.
wait_step() {
  local i state=
  for i in $(seq $((${3:-120} * 5))); do
    [[ $(steps_done "$1") -ge $2 ]] 2>/dev/null && return 0
    if [[ -n ${4:-} ]] && ((i % 5 == 0)); then
      state=$(job_field "$4" JobState)
      case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
        job_story "$4"
        die "job $4 ended $state before step $2 in $1" ;;
      esac
    fi
    sleep 0.2
  done
  if [[ -n ${4:-} ]]; then
    job_story "$4"
    tail -n 20 "$1" >&2 2>/dev/null || echo "(no metrics file $1)" >&2
  fi
  die "no step $2 in $1 after ${3:-120} s${state:+ (job $4 is $state)}"
}

# with_plan RECORD KEY=VALUE...: the record with those keys set.
with_plan() {
  local r=$1 kv
  shift
  for kv in "$@"; do r=$(sed -E "s/ ${kv%%=*}=[^ ]+/ $kv/" <<<"$r"); done
  echo "$r"
}

# plan_of RECORD: its layout, dp=..,tp=..,pp=..,zero=..
plan_of() { tr ' ' '\n' <<<"$1" | grep -E '^(dp|tp|pp|zero)=' | paste -sd, -; }
