#!/usr/bin/env bats
# morphd moves a job from one GPU type to two and back (issue 15), on a local Slurm cluster
# of one a100 node and one v100 node of 4 GPUs each, where the GPU type is a node feature
# (GpuTypeBy=feature) and HeterogeneousJobs=yes:
#
#  1. A best-effort bert-336m job of batch 256 starts on one type. morphd spans it over
#     both nodes (a requeue): JABAS's plan, the same local batch on every GPU, an a100
#     accumulating more micro-batches than a v100 (the record's groups=).
#  2. A guaranteed job asks for the v100 node: the best-effort job goes back to the a100s
#     alone (a requeue), the guaranteed job runs there.
#  Each job's loss matches the uninterrupted run within 1e-5 across every move.
#  3. A best-effort job of --morph-adaptive-batch (its batch growing 10% every 2 steps)
#     starts beside another job on 2 a100 GPUs; after each epoch of 3 adaptation steps
#     (AdaptiveEpochSteps=3) morphd plans it for its forecast batch, and when the other job
#     ends gives it the node's 4 GPUs under a plan of that batch; its losses match an
#     uninterrupted adaptive run.
#
# Its own cluster (port 18880, /tmp/morph-testcluster-hetero). Needs root, Slurm, munge and
# Open MPI; otherwise the test is skipped with the reason.

bats_require_minimum_version 1.5.0
load cluster
load morphd

setup_file() {
  # Batch 256: JABAS's split beats the a100 node alone by 29% (morph plan --model
  # bert-336m --batch 256 --gpus 1x4xa100-80g+1x4xv100-32g). No --micro-batches: on two
  # types every rank takes its share from morphrun (--rank-batch).
  TRAINER_ARGS="--layers 24 --hidden 16 --vocab 50 --vocab-multiple 4 --samples 100000 --global-batch 256"
  export BATCH=256 MORPH_TESTCLUSTER_GPU_TYPE_BY=feature
  CLUSTER_NODES=1x4xa100-80g,1x4xv100-32g REFERENCE_STEPS=300 morphd_setup 18880 /tmp/morph-testcluster-hetero 18940 \
    "HeterogeneousJobs=yes" "AdaptiveEpochSteps=3"
  # The adaptive job's own uninterrupted run (its batch path does not depend on the layout:
  # with γ = 1 every measured Φ < 1 grows the batch).
  [ -z "$MORPH_CLUSTER_SKIP" ] || return 0
  ADAPTIVE_ARGS="--similarity-every 2 --similarity-target 1"
  timeout 300 srun -N1 -n1 -p gpu --mpi=pmix "$MORPH_BUILDDIR/tests/trainer/morph-trainer" --layout dp=1 \
    ${TRAINER_ARGS/--global-batch 256/--global-batch 16} --adaptive-batch 16:128 $ADAPTIVE_ARGS --steps 80 --quiet \
    --loss-log "$WORK/reference-adaptive.loss" >"$WORK/reference-adaptive.out" 2>&1
  export ADAPTIVE_ARGS
}

setup() {
  [ -z "${MORPH_CLUSTER_SKIP:-}" ] || skip "$MORPH_CLUSTER_SKIP"
  [ -s "$WORK/reference.loss" ] || fail "the reference run failed: $(cat "$WORK/reference.out")"
}

teardown() {
  stop_morphd
  local jobs
  jobs=$(squeue -h -o %A)
  [ -z "$jobs" ] || scancel $jobs
}

teardown_file() { cluster_teardown; }

@test "morphd: a best-effort job spans an a100 and a v100 node, and leaves the v100 to a guaranteed job; losses continue" {
  rm -f "$WORK/morphd.log"
  job be 300
  job g 40
  local be g
  be=$(submit be --morph-sla=best-effort --morph-gpus=1-8)
  wait_state "$be" RUNNING 60
  wait_grep "$WORK/be/metrics" "^[0-9]" 120 3  # steps, and a checkpoint to reshard
  start_morphd
  # 1. Both nodes, under JABAS's plan.
  wait_grep "$WORK/morphd.log" "job $be: requeue released -> done" 120
  wait_grep "$WORK/be/metrics" "start layout=dp=8,.* nodes=2" 120
  local r
  r=$(job_record "$be")
  [[ $r == *" type=- "* && $r == *" groups=a100-80g:nodes=1:"*",v100-32g:nodes=1:"* ]] || fail "record: $r"
  [ "$(job_field "$be" Features)" = "[a100-80g*1&v100-32g*1]" ] || fail "Features=$(job_field "$be" Features)"
  scontrol show job "$be" | grep -qE "NodeList=(a100-1,v100-1|v100-1,a100-1)$" ||
    fail "$(scontrol show job "$be" | grep NodeList)"
  scontrol show job "$be" | grep -q "TresPerNode=gres:gpu:4$" || fail "$(scontrol show job "$be")"
  echo "# spanning both nodes: $(grep -o ' mbs=[0-9]* ' <<<"$r")$(grep -o 'groups=[^ ]*' <<<"$r")" >&3
  # JABAS's balance, as the model priced it: an a100 accumulates more than a v100.
  python3 - "$r" <<'PY' || fail "groups: $r"
import sys
rec = dict(kv.split("=", 1) for kv in sys.argv[1].split()[1:])
ga = {g.split(":")[0]: int(g.split("ga=")[1]) for g in rec["groups"].split(",")}
assert ga["a100-80g"] > ga["v100-32g"], ga
PY
  wait_grep "$WORK/be/metrics" "dp=8,tp=1,pp=1,zero=[01]$" 120 10  # ten steps on both types
  # 2. The guaranteed job on the v100 node: the best-effort job goes back to the a100s.
  g=$(submit g --morph-sla=guaranteed --morph-gpus=4 --morph-gpu-type=v100-32g)
  wait_grep "$WORK/morphd.log" "job $be: requeue released -> done" 120 2
  wait_state "$g" RUNNING 120
  [ "$(job_field "$g" NodeList)" = v100-1 ] || fail "the guaranteed job runs on $(job_field "$g" NodeList)"
  wait_done "$g" g
  wait_done "$be" be

  # Two requeues of the best-effort job at least (a third may span it again once the
  # guaranteed job ends), each with its checkpoint, reshard and restart.
  grep -q "job $be: requeue: .* -> 2 nodes x 4 a100-80g+v100-32g GPUs" "$WORK/morphd.log" &&
    grep -q "job $be: requeue: 2 nodes x 4 a100-80g+v100-32g GPUs .* -> 1 node x 4 a100-80g GPUs" "$WORK/morphd.log" ||
    fail "$(grep "job $be:" "$WORK/morphd.log")"
  [ "$(grep -c "reshard from=" "$WORK/be/metrics")" -ge 2 ] || fail "$(grep '^#' "$WORK/be/metrics")"
  grep "start layout=" "$WORK/be/metrics" | grep -A1 "layout=dp=8,.* nodes=2" | grep -q "nodes=1" ||
    fail "$(grep '^#' "$WORK/be/metrics")"
  for j in "$be" "$g"; do [ "$(job_field "$j" Priority)" != 0 ] || fail "job $j was left held"; done
  local be_loss g_loss
  be_loss=$(loss_continues be 300) || return 1
  g_loss=$(loss_continues g 40) || return 1
  echo "# losses against the uninterrupted run: best-effort $be_loss, guaranteed $g_loss;" \
    "$(grep -c "dp=8,tp=1,pp=1,zero=[01]$" "$WORK/be/metrics") steps on both types" >&3
  echo "# $(grep -c "job $be: requeue released -> done" "$WORK/morphd.log") requeues of the best-effort job:" >&3
  grep "job $be: requeue: " "$WORK/morphd.log" | sed 's/^/#   /' >&3
}

@test "morphd: an adaptive job is planned for its forecast batch each epoch and grows under a plan of that batch; losses continue" {
  [ -s "$WORK/reference-adaptive.loss" ] || fail "the adaptive reference run failed: $(cat "$WORK/reference-adaptive.out")"
  rm -f "$WORK/morphd.log"
  # Another job holds 2 of the a100 node's 4 GPUs for a while.
  local other ad
  other=$(sbatch --parsable -p gpu -w a100-1 --gres=gpu:2 -c 1 --mem=1G -o /dev/null --wrap "sleep 30")
  wait_state "$other" RUNNING 60
  start_morphd
  TRAINER_ARGS=${TRAINER_ARGS/--global-batch 256/--global-batch 16} EMULATE=4 job ad 80 $ADAPTIVE_ARGS
  ad=$(BATCH=16 submit ad --morph-sla=best-effort --morph-gpus=1-4 --morph-gpu-type=a100-80g --morph-plans=dp \
    --morph-framework=torch --morph-adaptive-batch=16:128)
  wait_state "$ad" RUNNING 120
  [ "$(job_field "$ad" NumNodes)" = 1 ] && scontrol show job "$ad" | grep -q "TresPerNode=gres:gpu:2$" ||
    fail "the adaptive job does not run on the 2 free GPUs: $(scontrol show job "$ad")"
  wait_grep "$WORK/morphd.log" "job $ad: adaptive batch after epoch [0-9]*: planned for batch" 120
  local planned
  planned=$(grep -o "job $ad: adaptive batch after epoch [0-9]*: planned for batch [0-9]*" "$WORK/morphd.log" |
    head -n 1 | grep -o "[0-9]*$")
  [ "$planned" -gt 16 ] || fail "planned for $planned: $(grep "job $ad:" "$WORK/morphd.log")"
  # The other job ends: morphd gives the adaptive job the 4 GPUs, under a plan of the
  # batch planned for its epoch then.
  wait_state "$other" COMPLETED 120
  wait_grep "$WORK/ad/metrics" "start layout=dp=4," 180
  local r batch
  r=$(job_record "$ad")
  batch=$(python3 -c "import sys; r = dict(kv.split('=', 1) for kv in sys.argv[1].split()[1:]); \
print(int(r['dp']) * int(r['ga']) * int(r['mb']) * int(r['mbs']))" "$r")
  [[ $r == *" batch=16 "* && $r == *" adaptive_batch=16:128"* && $r == *" dp=4 "* ]] || fail "record: $r"
  grep -q "job $ad: adaptive batch after epoch [0-9]*: planned for batch $batch " "$WORK/morphd.log" ||
    fail "the record's plan runs $batch samples, no epoch was planned for it: $(grep "job $ad:" "$WORK/morphd.log")"
  wait_done "$ad" ad
  local loss
  loss=$(REFERENCE=reference-adaptive.loss loss_continues ad 80) || return 1
  echo "# adaptive job: losses against the uninterrupted adaptive run: $loss; its record: ${r#* sla=}" >&3
  grep "job $ad: " "$WORK/morphd.log" | grep -E "adaptive batch|reconfigure|requeue:|grow|start" | sed 's/^/#   /' >&3
  grep -o "morph-trainer: adaptive batch resumed at [0-9]*" "$WORK"/"$ad".out | sed 's/^/#   /' >&3 || true
}
