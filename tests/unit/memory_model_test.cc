#include "libmorph/memory/memory_model.h"

#include <gtest/gtest.h>

#include "libmorph/model/catalog.h"
#include "libmorph/planner/plan_search.h"
#include "test_support.h"

namespace morph {
namespace {

// l=4, h=1024, a=16, V=1000: W = 1000*1024 + 4*(12*1024^2 + 13*1024) = 51,408,896.
ModelSpec small_model() { return ModelSpec{"m", 4, 1024, 16, 512, 1000, frenzy_parameter_count(4, 1024, 1000)}; }

MemoryOptions no_overhead() { return MemoryOptions{0, 0}; }

ExecutionPlan plan(int dp, int zero, int mbs) {
  ExecutionPlan p = test::make_plan(dp, 1, 1, 1, 1, mbs);
  p.zero_stage = zero;
  return p;
}

constexpr double kW = 51408896;
// One layer, micro-batch 2, t=1: s b h (10 + 24 + 5 a s / h) = 512*2*1024*(34 + 40)
constexpr double kLayer = 512.0 * 2 * 1024 * 74;
constexpr double kLogits = 4.0 * 512 * 2 * 1000;  // fp32 logits of the last stage

TEST(MemoryModel, Frenzy20BytesPerParameterAndActivations) {
  const MemoryEstimate e = estimate_memory(small_model(), 512, plan(2, 0, 2), no_overhead());
  EXPECT_DOUBLE_EQ(e.weights_bytes, 2 * kW);
  EXPECT_DOUBLE_EQ(e.gradients_bytes, 2 * kW);
  EXPECT_DOUBLE_EQ(e.optimizer_bytes, 16 * kW);
  EXPECT_DOUBLE_EQ(e.activations_bytes, 4 * kLayer + kLogits);
  EXPECT_DOUBLE_EQ(e.gpu_bytes(), 20 * kW + 4 * kLayer + kLogits);
}

TEST(MemoryModel, ZeroStagesPartitionByDataParallelSize) {
  const ModelSpec m = small_model();
  const MemoryEstimate z1 = estimate_memory(m, 512, plan(4, 1, 2), no_overhead());
  EXPECT_DOUBLE_EQ(z1.optimizer_bytes, 16 * kW / 4);
  EXPECT_DOUBLE_EQ(z1.gradients_bytes, 2 * kW);
  const MemoryEstimate z2 = estimate_memory(m, 512, plan(4, 2, 2), no_overhead());
  EXPECT_DOUBLE_EQ(z2.gradients_bytes, 2 * kW / 4);
  EXPECT_DOUBLE_EQ(z2.weights_bytes, 2 * kW);
  const MemoryEstimate z3 = estimate_memory(m, 512, plan(4, 3, 2), no_overhead());
  EXPECT_DOUBLE_EQ(z3.weights_bytes, 2 * kW / 4);
  EXPECT_DOUBLE_EQ(z3.weights_bytes + z3.gradients_bytes + z3.optimizer_bytes, 20 * kW / 4);
}

TEST(MemoryModel, ZeroOneAndTwoHoldDeepSpeedsBuckets) {
  const ModelSpec m = small_model();
  // 4.5 x (reduce + all-gather bucket) x 2e8 elements x 2 bytes = 3.6 GB, whatever the model.
  for (int zero : {1, 2}) {
    const MemoryEstimate e = estimate_memory(m, 512, plan(4, zero, 2), no_overhead());
    EXPECT_DOUBLE_EQ(e.buckets_bytes, 3.6e9) << "zero " << zero;
    EXPECT_DOUBLE_EQ(e.gpu_bytes(), e.weights_bytes + e.gradients_bytes + e.optimizer_bytes + e.activations_bytes + 3.6e9);
  }
  ExecutionPlan offload = plan(4, 2, 2);
  offload.offload = true;
  EXPECT_DOUBLE_EQ(estimate_memory(m, 512, offload, no_overhead()).buckets_bytes, 3.6e9);
  // Plain data parallelism has DDP's 25 MB buckets, within the overhead.
  EXPECT_DOUBLE_EQ(estimate_memory(m, 512, plan(4, 0, 2), no_overhead()).buckets_bytes, 0);
}

TEST(MemoryModel, MegatronKeepsFp32GradientsAndReducesInItsGradientBuffer) {
  // Megatron-LM with --bf16 and its distributed optimizer (ZeRO-1): 6 + 12/d bytes per
  // parameter and no DeepSpeed buckets; without it Frenzy's 20 (fp16's; bf16 needs 18).
  MemoryOptions megatron = no_overhead();
  megatron.states = StateLayout::megatron;
  const ModelSpec m = small_model();
  const MemoryEstimate z0 = estimate_memory(m, 512, plan(4, 0, 2), megatron);
  EXPECT_DOUBLE_EQ(z0.weights_bytes + z0.gradients_bytes + z0.optimizer_bytes, 20 * kW);
  const MemoryEstimate z1 = estimate_memory(m, 512, plan(4, 1, 2), megatron);
  EXPECT_DOUBLE_EQ(z1.weights_bytes, 2 * kW);
  EXPECT_DOUBLE_EQ(z1.gradients_bytes, 4 * kW);
  EXPECT_DOUBLE_EQ(z1.optimizer_bytes, 12 * kW / 4);
  EXPECT_DOUBLE_EQ(z1.buckets_bytes, 0);
  // DeepSpeed's layout of the same plan: 4 + 16/d and the 3.6 GB of buckets.
  const MemoryEstimate ds = estimate_memory(m, 512, plan(4, 1, 2), no_overhead());
  EXPECT_DOUBLE_EQ(ds.weights_bytes + ds.gradients_bytes + ds.optimizer_bytes, 8 * kW);
  EXPECT_DOUBLE_EQ(z1.activations_bytes, ds.activations_bytes);
}

TEST(MemoryModel, ZeroThreeHoldsItsLargestLayerWhole) {
  // DeepSpeed's ZeRO-3 estimate: 4 bytes per parameter of the largest layer, here a
  // transformer layer (12*1024^2 + 13*1024 = 12,596,224 against the embedding's 1,024,000),
  // whatever the DP size; TP splits it.
  const ModelSpec m = small_model();
  for (int dp : {2, 8}) {
    const MemoryEstimate e = estimate_memory(m, 512, plan(dp, 3, 2), no_overhead());
    EXPECT_DOUBLE_EQ(e.buckets_bytes, 4.0 * 12596224) << "dp " << dp;
    EXPECT_DOUBLE_EQ(e.gpu_bytes(), 20 * kW / dp + e.activations_bytes + 4.0 * 12596224);
  }
  ExecutionPlan tp2 = test::make_plan(4, 2, 1, 1, 1, 2);
  tp2.zero_stage = 3;
  EXPECT_DOUBLE_EQ(estimate_memory(m, 512, tp2, no_overhead()).buckets_bytes, 2.0 * 12596224);
  // A vocabulary larger than a layer: the embedding is the largest (50,000 x 1024).
  const ModelSpec wide{"w", 4, 1024, 16, 512, 50000, frenzy_parameter_count(4, 1024, 50000)};
  EXPECT_DOUBLE_EQ(estimate_memory(wide, 512, plan(4, 3, 2), no_overhead()).buckets_bytes, 4.0 * 50000 * 1024);
}

TEST(MemoryModel, OffloadMovesOptimizerStatesToTheHost) {
  MemoryOptions options{0, 1000};
  ExecutionPlan p = plan(2, 2, 2);
  p.offload = true;
  const MemoryEstimate e = estimate_memory(small_model(), 512, p, options);
  EXPECT_DOUBLE_EQ(e.optimizer_bytes, 0);
  EXPECT_DOUBLE_EQ(e.gradients_bytes, 0) << "16-bit gradients go to the host bucket by bucket";
  EXPECT_DOUBLE_EQ(e.weights_bytes, 2 * kW);
  EXPECT_DOUBLE_EQ(e.host_bytes_per_gpu, 1000 + 18 * kW / 2);
}

TEST(MemoryModel, CheckpointingKeepsLayerInputsAndOneLayer) {
  ExecutionPlan p = plan(1, 0, 2);
  p.checkpointing = true;
  const MemoryEstimate e = estimate_memory(small_model(), 512, p, no_overhead());
  EXPECT_DOUBLE_EQ(e.activations_bytes, 4 * (2.0 * 512 * 2 * 1024) + kLayer + kLogits);
}

TEST(MemoryModel, TensorParallelSplitsStatesAndActivations) {
  ExecutionPlan p = plan(1, 0, 2);
  p.tp = 2;
  const MemoryEstimate e = estimate_memory(small_model(), 512, p, no_overhead());
  EXPECT_DOUBLE_EQ(e.weights_bytes, 2 * kW / 2);
  // s b h (10 + 24/2 + 5 a s / (2h)) per layer
  EXPECT_DOUBLE_EQ(e.activations_bytes, 4 * (512.0 * 2 * 1024 * (10 + 12 + 20)) + kLogits / 2);
}

TEST(MemoryModel, PipelineFirstStageHoldsInFlightMicroBatches) {
  ExecutionPlan p = plan(1, 0, 2);
  p.pp = 2;
  p.micro_batches = 4;
  const MemoryEstimate e = estimate_memory(small_model(), 512, p, no_overhead());
  // 2 layers per stage, min(m, p) = 2 micro-batches in flight on the first stage.
  EXPECT_DOUBLE_EQ(e.activations_bytes, 2 * 2 * kLayer);
  const double stage_params = 1000.0 * 1024 + 2 * (12.0 * 1024 * 1024 + 13 * 1024);
  EXPECT_DOUBLE_EQ(e.weights_bytes, 2 * stage_params);
}

TEST(MemoryModel, PipelineAccumulationStepsShareOneFlush) {
  // Megatron-LM runs a step's a m micro-batches in one 1F1B flush: the first stage holds
  // min(a m, p), not min(m, p). 2 stages of 2 layers, 4 steps of one micro-batch: 2 in flight.
  ExecutionPlan p = test::make_plan(1, 1, 2, 4, 1, 2);
  EXPECT_DOUBLE_EQ(estimate_memory(small_model(), 512, p, no_overhead()).activations_bytes, 2 * 2 * kLayer);
  // 4 stages of 1 layer: a m = 2 of the first stage's 4 slots, then a m = 6 fill all 4.
  p = test::make_plan(1, 1, 4, 2, 1, 2);
  EXPECT_DOUBLE_EQ(estimate_memory(small_model(), 512, p, no_overhead()).activations_bytes, 2 * kLayer);
  p = test::make_plan(1, 1, 4, 3, 2, 2);
  EXPECT_DOUBLE_EQ(estimate_memory(small_model(), 512, p, no_overhead()).activations_bytes, 4 * kLayer);
}

TEST(MemoryModel, CheckNamesTheGpuThatOverflows) {
  const Cluster c = test::test_cluster();
  const Allocation a = parse_gpus_spec("1xbig+1xsmall", c, "--gpus");
  MemoryEstimate e;
  e.weights_bytes = 40 * test::kGiB;
  const MemoryFit fit = check_memory(e, a);
  EXPECT_FALSE(fit.fits);
  EXPECT_NE(fit.reason.find("small"), std::string::npos) << fit.reason;
  e.weights_bytes = 30 * test::kGiB;
  EXPECT_TRUE(check_memory(e, a).fits);
  e.host_bytes_per_gpu = 200 * test::kGiB;  // smallnode has 128 GiB
  EXPECT_FALSE(check_memory(e, a).fits);
}

// The acceptance cases: LLaMA-2-7B with batch 16 fits one 80 GB GPU only with
// ZeRO-Offload; GPT-2 1.5B fits without it.
TEST(MemoryModel, Llama7bNeedsOffloadOnOneGpuGpt2DoesNot) {
  const Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  const Allocation one = parse_gpus_spec("1xbig", test::test_cluster(), "--gpus");
  const PerfModel perf{ForwardModel{0, 10, 1}, PerfParams{}};
  for (const char* name : {"llama2-7b", "gpt2-1.5b"}) {
    const ModelSpec m = *catalog.find(name);
    const PlanSearch s = search_plans(Workload{m, 16, m.seq_len}, one, perf, PlanSearchOptions{});
    ASSERT_FALSE(s.feasible.empty()) << name;
    bool any_without_offload = false;
    for (const PlanOption& o : s.feasible) any_without_offload |= !o.plan.offload;
    EXPECT_EQ(any_without_offload, std::string(name) == "gpt2-1.5b") << name;
  }
}

}  // namespace
}  // namespace morph
