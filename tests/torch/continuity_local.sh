#!/bin/bash
# continuity_local.sh (make check, when PyTorch is there): the PyTorch example's runs
# continue across layouts without Slurm (examples/torch/launch_local.py starts the ranks).
# A run stopped at step 5, resharded with `morph reshard` and resumed under another layout
# has the losses of the uninterrupted run (relative difference <= 1e-5; in float64 they
# differ only in the order of sums, about 1e-16). Also gradient checkpointing, accumulation
# and the 1F1B schedule against the plain run, and checkpoints passed between the PyTorch
# example and the C++ reference trainer, both ways (one layout format, two frameworks).
# Last, the example's ranks must agree on an error of any type (agreement_local.py).
# Each comparison prints
#
#   <what> max_rel_loss_diff <x>
#
#   tests/torch/continuity_local.sh [BUILD_DIR]   (default: $MORPH_BUILDDIR, else <source>/build)
#
# Worlds have at most 8 ranks; each run is 10 steps of a tiny model. Skipped (exit 77) in
# a sanitized build: PyTorch does not load beside AddressSanitizer's runtime.
set -euo pipefail

src=${MORPH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
here=$src/examples/torch
build=$(cd "${1:-${MORPH_BUILDDIR:-$src/build}}" && pwd)
py=${PYTHON:-/usr/bin/python3}
if [ -n "${MORPH_SANITIZERS:-}" ]; then echo "skipped: a sanitized build (PyTorch beside ASan)"; exit 77; fi
"$py" -c 'import torch.distributed' 2>/dev/null || { echo "skipped: no PyTorch (Debian: python3-torch)"; exit 77; }
[ -e "$build/python/morph/_native.so" ] || { echo "skipped: the morph module is not built in $build"; exit 77; }
morph=$build/tools/morph/morph
reference=$build/tests/trainer/morph-trainer
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} MORPH_RULES_DIR=${MORPH_RULES_DIR:-$src/share/rules}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,tcp
work=$(mktemp -d "${TMPDIR:-/tmp}/morph-torch-continuity.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

model=(--layers 4 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --seed 1 --global-batch 16)
failed=0

ranks() { local IFS=,; local n=1; for kv in $1; do case $kv in dp=*|tp=*|pp=*) n=$((n * ${kv#*=}));; esac; done; echo $n; }
launch_args() { local IFS=,; for kv in $1; do echo "--${kv%%=*}" "${kv#*=}"; done; }

# torch LAYOUT "LAUNCH OPTIONS" TRAIN OPTIONS...
torch() {
  local layout=$1 extra=$2; shift 2
  # shellcheck disable=SC2046,SC2086
  "$py" "$here/launch_local.py" $(launch_args "$layout") $extra --global-batch 16 -- \
    "$py" "$here/train.py" "${model[@]}" --quiet "$@" >/dev/null
}

# cxx LAYOUT TRAINER OPTIONS...
cxx() {
  local layout=$1; shift
  mpirun --oversubscribe -np "$(ranks "$layout")" "$reference" --layout "$layout" "${model[@]}" --micro-batches 2 \
    --quiet "$@" >/dev/null
}

# compare WHAT REFERENCE LOG [FIRST_STEP]: max relative difference of the common steps >= FIRST_STEP.
compare() { "$py" "$src/tests/torch/compare_losses.py" "$@" || failed=1; }

# resume WHAT CHECKPOINT LAYOUT REFERENCE PART_LOG [cxx]: reshard, resume to step 10, compare steps 6..10.
resume() {
  local what=$1 from=$2 layout=$3 ref=$4 part=$5 prog=${6:-torch} to log
  to=$work/$(echo "$what" | tr -c 'a-zA-Z0-9\n' _)
  log=$to.txt
  cp "$part" "$log"
  "$morph" reshard --from "$from" --to "$to" --layout "$layout" >/dev/null
  if [ "$prog" = cxx ]; then cxx "$layout" --steps 10 --resume "$to" --loss-log "$log"
  else torch "$layout" "" --steps 10 --resume "$to" --loss-log "$log"; fi
  compare "$what" "$ref" "$log" 6
}

A=dp=2,tp=2,pp=2,zero=1
torch $A "" --steps 10 --loss-log A.txt
torch $A "" --steps 10 --save-at 5 --checkpoint-dir ckA --loss-log A5.txt
resume "more DP: $A -> dp=4,tp=2,pp=1,zero=1" ckA/step_5 dp=4,tp=2,pp=1,zero=1 A.txt A5.txt
resume "less DP: $A -> dp=1,tp=2,pp=2,zero=1" ckA/step_5 dp=1,tp=2,pp=2,zero=1 A.txt A5.txt
resume "TP 2->4: $A -> dp=1,tp=4,pp=2,zero=1" ckA/step_5 dp=1,tp=4,pp=2,zero=1 A.txt A5.txt
resume "PP 2->1: $A -> dp=2,tp=2,pp=1,zero=1" ckA/step_5 dp=2,tp=2,pp=1,zero=1 A.txt A5.txt
resume "ZeRO 1->0: $A -> dp=2,tp=2,pp=2,zero=0" ckA/step_5 dp=2,tp=2,pp=2,zero=0 A.txt A5.txt
resume "mixed: $A -> dp=4,tp=1,pp=1,zero=3" ckA/step_5 dp=4,tp=1,pp=1,zero=3 A.txt A5.txt
resume "mixed: $A -> dp=1,tp=4,pp=2,zero=0" ckA/step_5 dp=1,tp=4,pp=2,zero=0 A.txt A5.txt

torch dp=4,tp=1,pp=1,zero=3 "" --steps 10 --save-at 5 --checkpoint-dir ckZ3 --loss-log Z5.txt
resume "ZeRO 3->1: dp=4,tp=1,pp=1,zero=3 -> $A" ckZ3/step_5 $A A.txt Z5.txt

torch $A "--gc 1" --steps 10 --loss-log gc.txt
compare "gradient checkpointing: $A gc=1 vs gc=0" A.txt gc.txt
torch $A "--ga 2" --steps 10 --loss-log ga.txt
compare "gradient accumulation: $A ga=2 vs ga=1" A.txt ga.txt
torch $A "--micro-batches 4" --steps 10 --schedule 1f1b --loss-log 1f1b.txt
compare "1F1B, 4 micro-batches vs GPipe, 2" A.txt 1f1b.txt
"$py" "$src/tests/torch/agreement_local.py" "$here/train.py" || failed=1

if [ -x "$reference" ] && command -v mpirun >/dev/null; then
  cxx $A --steps 10 --loss-log C.txt
  cxx $A --steps 10 --save-at 5 --checkpoint-dir ckC --loss-log C5.txt
  resume "C++ -> train.py: $A -> dp=4,tp=1,pp=2,zero=0" ckC/step_5 dp=4,tp=1,pp=2,zero=0 C.txt C5.txt
  resume "train.py -> C++: $A -> dp=4,tp=1,pp=1,zero=3" ckA/step_5 dp=4,tp=1,pp=1,zero=3 A.txt A5.txt cxx
else
  echo "skipped: the C++ reference trainer ($reference) or mpirun is missing"
fi
exit $failed
