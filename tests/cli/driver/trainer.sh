#!/bin/bash
# A trainer for morphrun_driver.bats: STEPS iterations of 0.25 s reported on MORPH_METRICS;
# on the checkpoint signal it "saves" for SAVE_S seconds and exits.
echo "trainer rank=$RANK step=$SLURM_STEP_ID plan=[$MORPH_PLAN]" >&2
trap 'sleep "${SAVE_S:-2}"; echo "rank $RANK saved" >&2; exit 0' USR2
exec 3>"$MORPH_METRICS"
for i in $(seq 1 "${STEPS:-40}"); do
  echo "$i 0.25 4 1.0" >&3
  sleep 0.25
done
