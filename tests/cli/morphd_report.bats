#!/usr/bin/env bats
# morphrun reporting rank 0's iterations to morphd (MorphdAddress= in morph.conf), here to
# a stand-in server (tests/report/report_sink) on 127.0.0.1; and a morphd that cannot be
# reached costs one warning line, never the trainer's run.

bats_require_minimum_version 1.5.0
load common

setup() {
  : "${MORPH_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
  : "${MORPH_BUILDDIR:=$MORPH_SRCDIR/build}"
  MORPHRUN="$MORPH_BUILDDIR/launcher/morphrun"
  SINK="$MORPH_BUILDDIR/tests/report/report_sink"
  [ -x "$MORPHRUN" ] || skip "morphrun was not built (configure found no Slurm, Open MPI or hwloc)"
  [ -x "$SINK" ] || skip "reporting was built out (configure found no MUNGE)"
  munge -n </dev/null | unmunge >/dev/null 2>&1 || skip "munged is not reachable (runuser -u munge -- /usr/sbin/munged)"
  export MORPH_FRAMEWORKS="$MORPH_SRCDIR/share/frameworks"
  unset MORPH_RECORD MORPH_PLAN_ERROR SLURM_STEP_ID SLURM_JOB_ID
  W=$BATS_TEST_TMPDIR
}

teardown() {
  [ -z "${SINK_PID:-}" ] || kill "$SINK_PID" 2>/dev/null || true
}

# conf ADDRESS: a morph.conf with MorphdAddress=ADDRESS
conf() {
  { cat "$MORPH_SRCDIR/etc/morph.conf"; echo "MorphdAddress=$1"; } >"$W/morph.conf"
}

@test "morphrun reports rank 0's iterations to MorphdAddress, authenticated as the job's owner" {
  "$SINK" --port-file "$W/port" --owner "4242=$(id -u)" --count 2 --timeout 30 >"$W/sink.out" 2>"$W/sink.err" &
  SINK_PID=$!
  for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
  [ -s "$W/port" ] || fail "report_sink did not start: $(cat "$W/sink.err")"
  conf "127.0.0.1:$(cat "$W/port")"
  SLURM_JOB_ID=4242 run "$MORPHRUN" --config "$W/morph.conf" --plan dp=2,zero=1 --metrics "$W/metrics" -- sh -c \
    'printf "$((RANK * 10 + 1)) 0.5 32 3.25\n$((RANK * 10 + 2)) 0.25 32\n" >"$MORPH_METRICS"'
  [ "$status" -eq 0 ] && [ -z "$output" ] || fail "$status: $output"
  wait "$SINK_PID" || fail "report_sink: $(cat "$W/sink.err")"
  SINK_PID=
  run cat "$W/sink.out"
  [ "${#lines[@]}" -eq 2 ] || fail "$output"
  [ "${lines[0]}" = "job=4242 step=0 uid=$(id -u) iteration=1 seconds=0.5 samples=32 loss=3.25 layout=dp=2,tp=1,pp=1,zero=1" ] || fail "$output"
  [ "${lines[1]}" = "job=4242 step=0 uid=$(id -u) iteration=2 seconds=0.25 samples=32 loss=- layout=dp=2,tp=1,pp=1,zero=1" ] || fail "$output"
  [ "$(wc -l <"$W/metrics")" -eq 2 ]  # the metrics file is written as before
}

@test "a report for a job the user does not own is refused; the trainer runs on" {
  "$SINK" --port-file "$W/port" --owner "4242=$(($(id -u) + 1))" --count 1 --timeout 5 >"$W/sink.out" 2>"$W/sink.err" &
  SINK_PID=$!
  for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
  conf "127.0.0.1:$(cat "$W/port")"
  SLURM_JOB_ID=4242 run "$MORPHRUN" --config "$W/morph.conf" --plan dp=1 -- sh -c 'echo "1 0.5 32" >"$MORPH_METRICS"; echo done'
  [ "$status" -eq 0 ] || fail "$status: $output"
  [[ $output == *"morphd refused the report: uid $(id -u) does not own job 4242"* ]] || fail "$output"
  [[ $output == *done* ]] || fail "$output"
  run grep -c "refused (not-owner): uid $(id -u) does not own job 4242" "$W/sink.err"
  [ "$output" = 1 ] || fail "$(cat "$W/sink.err")"
}

@test "an unreachable MorphdAddress costs one warning line; the trainer runs to completion" {
  conf "127.0.0.1:1"
  SLURM_JOB_ID=4242 run --separate-stderr "$MORPHRUN" --config "$W/morph.conf" --plan dp=2 --metrics "$W/metrics" -- sh -c \
    'for i in 1 2 3; do echo "$i 0.1 8" >"$MORPH_METRICS"; done; echo "rank $RANK done"'
  [ "$status" -eq 0 ] || fail "$status: $output $stderr"
  [ "$(grep -c 'done' <<<"$output")" -eq 2 ] || fail "$output"
  [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ] || fail "$stderr"
  [[ $stderr == "morphrun: MorphdAddress=127.0.0.1:1: connect to 127.0.0.1:1: Connection refused (reported once; the trainer runs on)" ]] || fail "$stderr"
  [ "$(wc -l <"$W/metrics")" -eq 3 ]
}

@test "outside a Slurm job MorphdAddress is noted once and nothing is sent" {
  conf "127.0.0.1:1"
  run --separate-stderr "$MORPHRUN" --config "$W/morph.conf" --plan dp=1 -- sh -c 'echo "1 0.1 8" >"$MORPH_METRICS"'
  [ "$status" -eq 0 ] || fail "$status: $stderr"
  [ "$stderr" = "morphrun: MorphdAddress=127.0.0.1:1: not in a Slurm job; iterations are not reported" ] || fail "$stderr"
}
