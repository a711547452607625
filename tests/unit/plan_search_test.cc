#include "libmorph/planner/plan_search.h"

#include <gtest/gtest.h>

#include "libmorph/planner/framework_planning.h"
#include "libmorph/planner/sensitivity.h"
#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

const PerfModel kPerf{ForwardModel{0, 10, 1}, PerfParams{}};

Workload workload(int layers, int heads, std::int64_t batch) {
  return Workload{ModelSpec{"m", layers, 1024, heads, 512, 1000, frenzy_parameter_count(layers, 1024, 1000)}, batch, 512};
}

bool has_reason(const PlanSearch& s, const std::string& text) {
  for (const PlanOption& o : s.infeasible)
    if (o.reason.find(text) != std::string::npos) return true;
  return false;
}

TEST(PlanSearch, EveryFeasiblePlanIsValidAndRanked) {
  const Allocation a = parse_gpus_spec("2x4xbig", test::test_cluster(), "--gpus");
  const Workload w = workload(8, 16, 64);
  const PlanSearch s = search_plans(w, a, kPerf, PlanSearchOptions{});
  ASSERT_FALSE(s.feasible.empty());
  for (std::size_t i = 0; i < s.feasible.size(); ++i) {
    const ExecutionPlan& p = s.feasible[i].plan;
    EXPECT_EQ(p.gpus(), 8);
    EXPECT_EQ(p.global_batch(), 64) << to_string(p);
    EXPECT_EQ(16 % p.tp, 0);
    EXPECT_LE(p.tp, 4);  // nodes hold 4 GPUs
    EXPECT_EQ(8 % p.pp, 0);
    EXPECT_TRUE(plan_violation(w, a, p, PlanSearchOptions{}.memory).empty()) << to_string(p);
    if (i > 0) {
      EXPECT_GE(s.feasible[i - 1].throughput, s.feasible[i].throughput);
    }
  }
  EXPECT_TRUE(has_reason(s, "tp=8 does not fit inside a node"));
}

TEST(PlanSearch, DivisibilityRulesNameTheirReason) {
  const Allocation a = parse_gpus_spec("6xbig", test::test_cluster(), "--gpus");
  const PlanSearch s = search_plans(workload(4, 4, 12), a, kPerf, PlanSearchOptions{});
  EXPECT_TRUE(has_reason(s, "tp=3 does not divide heads=4"));
  EXPECT_TRUE(has_reason(s, "pp=3 does not divide layers=4"));
  const PlanSearch odd = search_plans(workload(4, 4, 10), a, kPerf, PlanSearchOptions{});
  EXPECT_TRUE(has_reason(odd, "global batch 10 is not divisible by dp=6"));
}

// Grouped-query attention: Megatron-LM splits the query groups over tensor parallelism
// (qwen2-7b's 28 heads allow tp=7 on a 7-GPU node, its 4 key/value heads do not).
TEST(PlanSearch, TpMustDivideTheKeyValueHeads) {
  const Allocation seven = parse_gpus_spec("7xbig", test::test_cluster(), "--gpus");
  Workload w = workload(7, 28, 14);
  EXPECT_FALSE(has_reason(search_plans(w, seven, kPerf, PlanSearchOptions{}), "does not divide kv_heads"));
  w.model.kv_heads = 4;
  const PlanSearch s = search_plans(w, seven, kPerf, PlanSearchOptions{});
  EXPECT_TRUE(has_reason(s, "tp=7 does not divide kv_heads=4"));
  ASSERT_FALSE(s.feasible.empty());
  for (const PlanOption& o : s.feasible) EXPECT_EQ(o.plan.tp, 1) << to_string(o.plan);
  const Allocation four = parse_gpus_spec("4xbig", test::test_cluster(), "--gpus");
  bool tp4 = false;
  for (const PlanOption& o : search_plans(workload(7, 28, 16), four, kPerf, PlanSearchOptions{}).feasible)
    tp4 = tp4 || o.plan.tp == 4;
  EXPECT_TRUE(tp4);  // 4 divides both
}

// Sizing prunes node counts with any_valid_shape; it must say yes exactly where some
// (d, t, p) split passes structure_violation, the rules search_plans applies.
TEST(PlanSearch, AnyValidShapeAgreesWithTheStructuralRules) {
  const Cluster& cluster = test::test_cluster();
  const NodeType& node = *cluster.find_node_type("bignode");
  Workload gqa = workload(28, 28, 512);
  gqa.model.kv_heads = 4;
  int valid = 0, invalid = 0;
  for (const Workload& base : {workload(32, 32, 512), workload(24, 16, 96), gqa})
    for (std::int64_t batch : {base.global_batch, std::int64_t{7}, std::int64_t{1}})
      for (unsigned features : {unsigned{kAllFeatures}, kAllFeatures & ~kFeatureTensor, kAllFeatures & ~kFeaturePipeline,
                                kAllFeatures & ~(kFeatureTensor | kFeaturePipeline)})
        for (int gpus_per_node : {1, 3, 4, 6, 8})
          for (int nodes = 1; nodes <= (gpus_per_node == 8 ? 40 : 6); ++nodes) {
            Workload w = base;
            w.global_batch = batch;
            const int gpus = nodes * gpus_per_node;
            const Allocation a = uniform_allocation(cluster, node, nodes, gpus_per_node);
            bool brute = false;
            for (int t = 1; t <= gpus; ++t)
              for (int p = 1; t * p <= gpus; ++p) {
                if (gpus % (t * p) != 0 || (t > 1 && !(features & kFeatureTensor)) ||
                    (p > 1 && !(features & kFeaturePipeline)))
                  continue;
                ExecutionPlan plan = test::make_plan(gpus / (t * p), t, p, 1, 1, 1);
                if (batch % plan.dp == 0) plan.ga_steps = static_cast<int>(batch / plan.dp);
                brute = brute || structure_violation(w, a, plan).empty();
              }
            EXPECT_EQ(any_valid_shape(w, gpus, gpus_per_node, features), brute)
                << w.model.layers << " layers, batch " << batch << ", " << nodes << " x " << gpus_per_node
                << ", features " << features;
            (brute ? valid : invalid)++;
          }
  EXPECT_GT(valid, 100);  // both answers are exercised
  EXPECT_GT(invalid, 100);
}

TEST(PlanSearch, PrimeGpuCountAndSingleGpu) {
  const Allocation seven = parse_gpus_spec("7xbig", test::test_cluster(), "--gpus");
  const PlanSearch s = search_plans(workload(7, 16, 14), seven, kPerf, PlanSearchOptions{});
  for (const PlanOption& o : s.feasible) EXPECT_EQ(o.plan.dp * o.plan.pp, 7);  // tp=7 does not divide 16 heads
  const Allocation one = parse_gpus_spec("1xbig", test::test_cluster(), "--gpus");
  const PlanSearch single = search_plans(workload(4, 16, 3), one, kPerf, PlanSearchOptions{});
  ASSERT_FALSE(single.feasible.empty());
  for (const PlanOption& o : single.feasible) {
    EXPECT_EQ(o.plan.gpus(), 1);
    EXPECT_TRUE(o.plan.zero_stage == 0 || o.plan.offload);  // ZeRO-DP is pointless on one GPU
  }
}

TEST(PlanSearch, FeatureMaskRestrictsFamilies) {
  const Allocation a = parse_gpus_spec("8xbig", test::test_cluster(), "--gpus");
  PlanSearchOptions only_dp;
  only_dp.features = parse_plan_features("dp", "--plans");
  for (const PlanOption& o : search_plans(workload(8, 16, 64), a, kPerf, only_dp).feasible)
    EXPECT_EQ(plan_features(o.plan), 0u) << to_string(o.plan);
  PlanSearchOptions three_d;
  three_d.features = parse_plan_features("3d,gc", "--plans");
  bool saw_tp = false;
  for (const PlanOption& o : search_plans(workload(8, 16, 64), a, kPerf, three_d).feasible) {
    EXPECT_EQ(plan_features(o.plan) & (kFeatureZero | kFeatureOffload), 0u);
    saw_tp |= o.plan.tp > 1;
  }
  EXPECT_TRUE(saw_tp);
  EXPECT_THROW(parse_plan_features("dp,warp", "--plans"), Error);
}

TEST(PlanSearch, MegatronsPlansStopAtZeroOne) {
  // "zero" of --morph-plans is stages 1-3; Megatron-LM's distributed optimizer is stage 1.
  ExecutionPlan z = test::make_plan(4, 1, 1, 1, 1, 4);
  for (int stage : {1, 2, 3}) {
    z.zero_stage = stage;
    EXPECT_EQ(plan_features(z) & ~parse_plan_features("zero", "--plans"), 0u) << stage;
    EXPECT_EQ((plan_features(z) & ~framework_plan_features(Framework::megatron)) == 0, stage == 1) << stage;
    EXPECT_EQ(plan_features(z) & ~framework_plan_features(Framework::deepspeed), 0u) << stage;
  }
  const Allocation a = parse_gpus_spec("8xbig", test::test_cluster(), "--gpus");
  PlanSearchOptions megatron;
  megatron.features = framework_plan_features(Framework::megatron);
  bool saw_zero1 = false;
  for (const PlanOption& o : search_plans(workload(8, 16, 64), a, kPerf, megatron).feasible) {
    EXPECT_LE(o.plan.zero_stage, 1) << to_string(o.plan);
    EXPECT_FALSE(o.plan.offload) << to_string(o.plan);
    saw_zero1 |= o.plan.zero_stage == 1;
  }
  EXPECT_TRUE(saw_zero1);
  MorphRequest request;
  request.plans = "dp,zero,offload";
  request.framework = Framework::megatron;
  EXPECT_EQ(allowed_plan_features(request, "all"), kFeatureZero);
  request.framework = Framework::deepspeed;
  EXPECT_EQ(allowed_plan_features(request, "all"), kFeatureZero | kFeatureShardedZero | kFeatureOffload);
  EXPECT_EQ(allowed_plan_features(request, "dp,offload,gc"), kFeatureOffload);
}

TEST(PlanSearch, OutOfMemoryIsReportedPerVariant) {
  const Allocation a = parse_gpus_spec("1xsmall", test::test_cluster(), "--gpus");
  // 2e9 parameters: 40 GB of states do not fit 32 GiB without offload.
  Workload w{ModelSpec{"m", 24, 2048, 16, 1024, 0, 2e9}, 8, 1024};
  const PlanSearch s = search_plans(w, a, kPerf, PlanSearchOptions{});
  EXPECT_TRUE(has_reason(s, "out of memory"));
  for (const PlanOption& o : s.feasible) EXPECT_TRUE(o.plan.offload) << to_string(o.plan);
  ASSERT_FALSE(s.feasible.empty());
}

TEST(PlanSearch, MicroBatchCapIsHonoured) {
  const Allocation a = parse_gpus_spec("2xbig", test::test_cluster(), "--gpus");
  PlanSearchOptions options;
  options.max_micro_batch_size = 2;
  for (const PlanOption& o : search_plans(workload(4, 16, 64), a, kPerf, options).feasible)
    EXPECT_LE(o.plan.micro_batch_size, 2);
}

TEST(PlanSearch, FitMicroBatchShrinksUntilItFits) {
  const Allocation a = parse_gpus_spec("1xsmall", test::test_cluster(), "--gpus");
  const Workload w = workload(24, 16, 64);
  ExecutionPlan p;
  p.micro_batch_size = 64;
  const ExecutionPlan fitted = fit_micro_batch(w, a, p, MemoryOptions{});
  EXPECT_LT(fitted.micro_batch_size, 64);
  EXPECT_EQ(fitted.global_batch(), 64);
  EXPECT_TRUE(plan_violation(w, a, fitted, MemoryOptions{}).empty());
  ExecutionPlan bigger = fitted;
  bigger.micro_batch_size *= 2;
  bigger.ga_steps /= 2;
  EXPECT_FALSE(plan_violation(w, a, bigger, MemoryOptions{}).empty());
}

TEST(Sensitivity, EnvelopeNeverFallsAndPackingUsesFewestNodes) {
  const Cluster c = test::test_cluster();
  const NodeType& node = *c.find_node_type("bignode");
  const Allocation a = packed_allocation(c, node, 12, 0);
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_EQ(a.nodes[0].gpus, 8);
  EXPECT_EQ(a.nodes[1].gpus, 4);
  const std::vector<CurvePoint> curve = gpu_curve(workload(8, 16, 64), c, node, 12, kPerf, PlanSearchOptions{});
  ASSERT_EQ(curve.size(), 12u);
  for (std::size_t i = 1; i < curve.size(); ++i) EXPECT_GE(curve[i].envelope, curve[i - 1].envelope);
  // 5 GPUs: 64 samples do not split over dp=5 and tp/pp=5 divide nothing: flat.
  EXPECT_FALSE(curve[4].feasible);
  EXPECT_DOUBLE_EQ(curve[4].envelope, curve[3].envelope);
  EXPECT_GT(curve[7].throughput, curve[0].throughput);
}

TEST(Sensitivity, MoreCpusSpeedUpOffloadedOptimizer) {
  const Cluster c = test::test_cluster();
  Workload w{ModelSpec{"m", 24, 2048, 16, 1024, 0, 2e9}, 8, 1024};
  PlanSearchOptions offload_only;
  offload_only.features = kFeatureOffload | kFeatureCheckpointing;
  const std::vector<CurvePoint> curve = cpu_curve(w, c, *c.find_node_type("smallnode"), 1, 4, kPerf, offload_only);
  ASSERT_EQ(curve.size(), 4u);
  ASSERT_TRUE(curve[0].feasible);
  EXPECT_GT(curve[3].throughput, curve[0].throughput);
}

}  // namespace
}  // namespace morph
