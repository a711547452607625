#!/usr/bin/env bash
# continuity.sh prepare | gpu OUT_DIR | back OUT_DIR: the PyTorch example's checkpoints
# between the CPU (gloo) and a GPU (NCCL, one rank), in float64: every resumed run must have
# the losses of the uninterrupted one (tests/torch/compare_losses.py, relative difference
# at most 1e-5), as tests/torch/continuity_local.sh checks between CPU layouts.
#
#   prepare   here, with the build tree ($MORPH_BUILDDIR, default build/): the CPU runs of
#             layout A (dp=2,tp=2,pp=2,zero=1: 8 ranks) and of one rank, and A's step-5
#             checkpoint resharded to one rank, into $MORPH_GPU_PACK/continuity
#   gpu DIR   on the GPU machine (run.sh; PYTHONPATH holds the morph package): one rank on
#             the GPU against the CPU's runs, its own step-5 checkpoint resumed under another
#             plan, and A's resumed; DIR gets the GPU's losses and step-5 checkpoint
#   back DIR  here: the GPU's step-5 checkpoint resharded to A and resumed on the CPU
# GPU_DEVICE=cpu runs the `gpu` part on the CPU (to check this script without a GPU).
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pack=${MORPH_GPU_PACK:-$top/.gpu}/continuity
py=${PYTHON:-python3}
gpu=${GPU_DEVICE:-cuda}
A=dp=2,tp=2,pp=2,zero=1
ONE=dp=1,tp=1,pp=1,zero=0
model=(--layers 4 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --seed 1 --global-batch 16 --dtype float64)
failed=0

launch_args() { local IFS=, kv; for kv in $1; do echo "--${kv%%=*}" "${kv#*=}"; done; }
# train LAYOUT DEVICE "LAUNCH OPTIONS" TRAIN OPTIONS...
train() {
  local layout=$1 device=$2 extra=$3
  shift 3
  # shellcheck disable=SC2046,SC2086  # the layout's and $extra's words
  "$py" "$top/examples/torch/launch_local.py" $(launch_args "$layout") $extra --global-batch 16 -- \
    "$py" "$top/examples/torch/train.py" "${model[@]}" --device "$device" --quiet "$@" >/dev/null ||
    { echo "FAIL train.py $layout on $device ($*)"; failed=1; }
}
compare() { "$py" "$top/tests/torch/compare_losses.py" "$@" || failed=1; }
# resume WHAT LAYOUT DEVICE CHECKPOINT REFERENCE PART_LOG: to step 10, compared from step 6.
resume() {
  local what=$1 layout=$2 device=$3 from=$4 ref=$5 part=$6 log
  log=$(mktemp)
  cp "$part" "$log"
  train "$layout" "$device" "" --steps 10 --resume "$from" --loss-log "$log"
  compare "$what" "$ref" "$log" 6
}

# The build tree's morph command and Python package (prepare and back, here).
use_build_tree() {
  build=$(cd "${MORPH_BUILDDIR:-$top/build}" && pwd) || exit 1
  export PYTHONPATH=$build/python MORPH_RULES_DIR=$top/share/rules
}

case ${1:-} in
  prepare)
    use_build_tree
    rm -rf "$pack" && mkdir -p "$pack" && cd "$pack" || exit 1
    train "$A" cpu "" --steps 10 --loss-log A.txt
    train "$A" cpu "" --steps 10 --save-at 5 --checkpoint-dir ckA --loss-log A5.txt
    train "$ONE" cpu "" --steps 10 --loss-log one.txt
    "$build/tools/morph/morph" reshard --from ckA/step_5 --to A_to_one --layout "$ONE" >/dev/null || failed=1
    rm -rf ckA
    ;;
  gpu)
    out=$(mkdir -p "$2" && cd "$2" && pwd) || exit 1
    cd "$out" || exit 1
    train "$ONE" "$gpu" "" --steps 10 --loss-log G.txt
    compare "one rank: GPU vs CPU" "$pack/one.txt" G.txt
    train "$ONE" "$gpu" "" --steps 10 --save-at 5 --checkpoint-dir ckG --loss-log G5.txt
    resume "GPU step 5 -> GPU, ga=2" "$ONE,ga=2" "$gpu" ckG/step_5 G.txt G5.txt
    resume "CPU $A step 5 -> GPU, one rank" "$ONE" "$gpu" "$pack/A_to_one" "$pack/A.txt" "$pack/A5.txt"
    train "$ONE" "$gpu" "--gc 1" --steps 10 --loss-log gc.txt
    compare "GPU gradient checkpointing vs none" G.txt gc.txt
    ;;
  back)
    use_build_tree
    work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
    "$build/tools/morph/morph" reshard --from "$2/ckG/step_5" --to "$work/G_to_A" --layout "$A" >/dev/null || failed=1
    resume "GPU step 5 -> CPU $A" "$A" cpu "$work/G_to_A" "$2/G.txt" "$2/G5.txt"
    ;;
  *)
    echo "usage: continuity.sh prepare | gpu OUT_DIR | back OUT_DIR" >&2
    exit 2
    ;;
esac
exit $failed
