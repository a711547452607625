#!/bin/sh
# make check-fidelity: how closely the iteration-time model follows the Morphling artifact.
# Reports, and judges nothing: per profile the largest in-sample error of morph fit, the
# Table 2 errors of morph validate (K=3), and the online-refit summaries (Morphling §4).
# Exits non-zero only when a morph command fails or its output lacks the expected line.
#
# Usage: check_fidelity.sh ARTIFACT_DIR   (MORPH: the morph binary; MORPH_ARTIFACT_DIR overrides
# the folder; MORPH_CONF, MORPH_CATALOG and MORPH_ARTIFACT_SPEC as for morph itself)
set -eu

: "${MORPH:?check-fidelity: set MORPH to the morph binary}"
artifact=${MORPH_ARTIFACT_DIR:-${1:?usage: check_fidelity.sh ARTIFACT_DIR}}

if [ ! -d "$artifact/profile" ] || [ ! -d "$artifact/traces" ]; then
  echo "check-fidelity: skipped: no Morphling artifact at $artifact (set MORPH_ARTIFACT_DIR=DIR)"
  exit 0
fi

# fit: the largest |error| over the points of `morph --json fit`, one "error": per point.
for dir in "$artifact"/profile/*/; do
  model=$(basename "$dir")
  json=$("$MORPH" --json fit --profile "$dir") || { echo "check-fidelity: morph fit --profile $dir failed" >&2; exit 1; }
  printf '%s\n' "$json" | awk -v model="$model" '
    /^ *"error": / { v = $2; sub(/,$/, "", v); v += 0; if (v < 0) v = -v; if (n == 0 || v > max) max = v; n++ }
    END {
      if (n == 0) printf "fit: model=%s max_in_sample_err=n/a points=0\n", model
      else printf "fit: model=%s max_in_sample_err=%.2f%% points=%d\n", model, 100 * max, n
    }'
done

# validate: the "overall: avg A% max B% over N points (...)" line.
out=$("$MORPH" validate --artifact "$artifact") || { echo "check-fidelity: morph validate failed" >&2; exit 1; }
line=$(printf '%s\n' "$out" | sed -n 's/^overall: avg \([0-9.]*\)% max \([0-9.]*\)% over \([0-9]*\) points.*/validate: avg=\1% max=\2% points=\3 K=3/p')
[ -n "$line" ] || { echo "check-fidelity: no 'overall:' line in the output of morph validate" >&2; exit 1; }
echo "$line"

# online refit: the last line of morph validate --online, from the model fitted with K=3
# trace rows and from the profile's fit alone (K=0, as morphd starts from morph-profile's);
# a refit after every row, then only above morphd's default RefitErrorThreshold (0.10).
for threshold in 0 0.10; do
  for k in 3 0; do
    out=$("$MORPH" validate --artifact "$artifact" --extra "$k" --online --refit-threshold "$threshold") ||
      { echo "check-fidelity: morph validate --extra $k --online --refit-threshold $threshold failed" >&2; exit 1; }
    printf '%s\n' "$out" | sed -n "s/^online: /online: K=$k /p" | grep . ||
      { echo "check-fidelity: no 'online:' line in the output of morph validate --extra $k --online" >&2; exit 1; }
  done
done
