#!/usr/bin/env bash
# Installs the Debian packages, builds and installs Morph under build/demo/prefix, and
# runs its main job: plan a job on a heterogeneous set of GPUs and validate the
# performance model against the Morphling artifact's measurements.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

morph_install_deps
morph_bootstrap
prefix="$MORPH_TOP/build/demo/prefix"
morph_build "$MORPH_TOP/build/demo" --prefix="$prefix"
make -C "$MORPH_TOP/build/demo" install >/dev/null
morph="$prefix/bin/morph"

morph_log "morph plan --model llama2-7b --batch 512 --gpus 2x8xa100"
"$morph" plan --model llama2-7b --batch 512 --gpus 2x8xa100 --top 5

morph_log "morph plan --model gpt2-1.5b --batch 128 --gpus 4xa100+4xv100"
"$morph" plan --model gpt2-1.5b --batch 128 --gpus 4xa100+4xv100 --top 5

artifact=$(morph_artifact_dir)
if [ -z "$artifact" ]; then
  morph_log "the Morphling artifact is not at ../shared/data/morphling-artifact: validation skipped"
  exit 0
fi
morph_log "morph fit --profile $artifact/profile/bert --save build/demo/bert.json"
"$morph" fit --profile "$artifact/profile/bert" --save "$MORPH_TOP/build/demo/bert.json"
morph_log "morph plan --perf build/demo/bert.json --model bert-336m --batch 256 --gpus 8xa800"
"$morph" plan --perf "$MORPH_TOP/build/demo/bert.json" --model bert-336m --batch 256 --gpus 8xa800 --top 5
morph_log "morph validate --artifact $artifact"
"$morph" validate --artifact "$artifact"
