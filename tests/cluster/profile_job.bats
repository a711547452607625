#!/usr/bin/env bats
# morph-profile job on the local Slurm cluster (tests/cluster/testcluster): one emulated
# node of 8 a100 GPUs, the reference trainer (tests/trainer/morph-trainer) under morphrun
# in the 7 sampled configurations and 3 held out ones, the profile folder fitted by
# `morph fit --profile`, the fitted model saved in PerfModelDir.
#
# Its own cluster (port 18470, /tmp/morph-testcluster-profjob). Needs root, Slurm, munge
# and Open MPI; otherwise every test is skipped with the reason. The trainer is a CPU MLP
# on shared cores, so the figures are noise: only their presence and finiteness are checked.

bats_require_minimum_version 1.5.0

# The reference trainer's sizes as an inline model spec (its MLP has no heads; 4 lets TP 4).
TINY=layers=4,hidden=16,heads=4,seq=8,vocab=52,name=morph-trainer-mlp

load cluster

setup_file() {
  CLUSTER_NODES=1x8xa100-80g cluster_setup 18470 /tmp/morph-testcluster-profjob profiler/morph-profile \
    launcher/morphrun tests/trainer/morph-trainer
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  export WORK="$MORPH_TESTCLUSTER_DIR/profile-job"
  rm -rf "$WORK"
  install -d -m 1777 "$WORK" "$WORK/perf"
  # The cluster's morph.conf with a PerfModelDir for --save.
  { cat "$MORPH_TESTCLUSTER_DIR/morph.conf"; echo "PerfModelDir=$WORK/perf"; } >"$WORK/morph.conf"
  export MORPH_CONF="$WORK/morph.conf" MORPH_CATALOG="$MORPH_SRCDIR/share/models.json"
  export MORPH_ARTIFACT_SPEC="$MORPH_SRCDIR/share/morphling-artifact.json"
  export MORPH_FRAMEWORKS="$MORPH_SRCDIR/share/frameworks"
  # One profiling run for all tests: W=2, K=3 iterations of >= 0.05 s, 3 held out.
  OMPI_MCA_btl=self,tcp timeout 900 salloc -N1 -p gpu -C a100-80g --exclusive \
    "$MORPH_BUILDDIR/profiler/morph-profile" job --model "$TINY" --batch 32 --gpus-per-node 8 \
    --warmup 2 --iterations 3 --held-out 3 --timeout 120 --out "$WORK/profile" --save \
    --morphrun "$MORPH_BUILDDIR/launcher/morphrun" -- \
    "$MORPH_BUILDDIR/tests/trainer/morph-trainer" --layers 4 --hidden 16 --vocab 50 --vocab-multiple 4 \
    --samples 4096 --global-batch 32 --micro-batches 2 --steps 100000 --min-step-seconds 0.05 --quiet \
    >"$WORK/report.txt" 2>"$WORK/stderr.txt"
  echo $? >"$WORK/status"
}

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
}

teardown_file() { cluster_teardown; }

show_report() {
  printf -- '--- report ---\n%s\n--- stderr ---\n%s\n' "$(cat "$WORK/report.txt")" "$(cat "$WORK/stderr.txt")" >&2
}

@test "morph-profile job ran 7+ configurations, 3 with ZeRO-Offload, and fitted them" {
  [ "$(cat "$WORK/status")" -eq 0 ] || { show_report; false; }
  grep -E '^(in-sample mean absolute error|profiling wall time) ' "$WORK/report.txt" >&3
  local ran
  ran=$(grep -c '^dp=.* measured .* fitted .* error ' "$WORK/report.txt" || true)
  [ "$ran" -ge 10 ] || { echo "only $ran configurations reported" >&2; false; }  # 7 + 3 held out
  [ "$(sed -n 2p "$WORK/profile/config.csv" | cut -d, -f1-2)" = 1,8 ]
  [ "$(tail -n +2 "$WORK/profile/config.csv" | wc -l)" -ge 7 ]
  [ "$(tail -n +2 "$WORK/profile/config.csv" | grep -c ',zero-offload,')" -eq 3 ]
  grep -Eq '^in-sample mean absolute error [0-9.]+%$' "$WORK/report.txt"
  grep -Eq '^profiling wall time [0-9.]+ s$' "$WORK/report.txt"
}

@test "the held-out error is a finite number" {
  [ "$(cat "$WORK/status")" -eq 0 ] || { show_report; false; }
  grep -E '^held-out mean absolute error [0-9.]+% over 3 configurations$' "$WORK/report.txt" >&3
}

@test "morph fit --profile accepts the profile folder and prints its error on its points" {
  [ "$(cat "$WORK/status")" -eq 0 ] || { show_report; false; }
  run "$MORPH_BUILDDIR/tools/morph/morph" fit --profile "$WORK/profile" --model "$TINY" --batch 32
  echo "$output" >&2
  [ "$status" -eq 0 ]
  [[ "$output" == *"RMSLE "* ]]
  [ "$(grep -c 'config.csv:[0-9]' <<<"$output")" -ge 7 ]
}

@test "--save stored the fitted model in PerfModelDir under the model's name" {
  [ "$(cat "$WORK/status")" -eq 0 ] || { show_report; false; }
  grep -q "^saved $WORK/perf/morph-trainer-mlp.json$" "$WORK/report.txt"
  grep -q '"morph-trainer-mlp"' "$WORK/perf/morph-trainer-mlp.json"
}
