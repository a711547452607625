#!/bin/bash
# A trainer for morphrun_driver.bats: STEPS iterations of 0.25 s reported on MORPH_METRICS;
# on the checkpoint signal it "saves" for SAVE_S seconds and exits. With EXIT_AT_START it
# exits with that code before its first iteration; with SILENT it reports nothing.
echo "trainer rank=$RANK step=$SLURM_STEP_ID job_name=${SLURM_JOB_NAME-unset} plan=[$MORPH_PLAN] choice=${MORPH_CHECKPOINT_CHOICE-unset} load=${MORPH_CHECKPOINT-none}" >&2
[ -z "${EXIT_AT_START:-}" ] || exit "$EXIT_AT_START"  # before its first iteration
trap 'sleep "${SAVE_S:-2}"; echo "rank $RANK saved" >&2; exit 0' USR2
if [ -n "${SILENT:-}" ]; then  # never reports, so its morphrun does not signal it for 60 s
  for _ in $(seq 1 "${STEPS:-40}"); do sleep 0.25; done
  exit 0
fi
exec 3>"$MORPH_METRICS"
for i in $(seq 1 "${STEPS:-40}"); do
  echo "$i 0.25 4 1.0" >&3
  sleep 0.25
done
