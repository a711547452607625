// The heterogeneous data-parallel plan priced by Morph's model (libmorph/planner/hetero_plan.h).
#include "libmorph/planner/hetero_plan.h"

#include <gtest/gtest.h>

#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/request/limits.h"
#include "test_support.h"

namespace morph {
namespace {

class HeteroPlanTest : public ::testing::Test {
 protected:
  MorphConfig config = parse_morph_conf(
      "GpuType=a100-80g Aliases=a100 MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n"
      "GpuType=v100-32g Aliases=v100 MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=120 PcieBandwidthGBps=12\n"
      "NodeType=a Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25\n"
      "NodeType=v Gpu=v100-32g Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25\n",
      "test.conf");
  Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  Workload workload{*catalog.find("bert-336m"), 256, 512};
  PerfModel perf = PerfStore{}.model_for(workload.model, 512, *config.cluster.find_gpu_type("a100-80g"), 0.4);
  PlanSearchOptions options;
};

TEST_F(HeteroPlanTest, FasterGpusTakeMoreStepsAndTheSlowestGroupSetsTheTime) {
  const Allocation a = parse_gpus_spec("1x4xa100+1x4xv100", config.cluster, "test");
  const HeteroPlan h = best_hetero_plan(workload, a, perf, options);
  ASSERT_TRUE(h.feasible) << h.reason;
  ASSERT_EQ(h.groups.size(), 2u);
  EXPECT_EQ(h.groups[0].gpu_type, "a100-80g");
  EXPECT_EQ(h.groups[1].gpu_type, "v100-32g");
  EXPECT_GT(h.groups[0].ga_steps, h.groups[1].ga_steps);
  EXPECT_EQ(h.plan.dp, 8);
  EXPECT_EQ(4 * h.plan.micro_batch_size * (h.groups[0].ga_steps + h.groups[1].ga_steps), 256);
  // Each group's time is the plan of the whole allocation as if of its type.
  for (std::size_t k = 0; k < 2; ++k) {
    const Allocation as_k = parse_gpus_spec(k == 0 ? "2x4xa100" : "2x4xv100", config.cluster, "test");
    ExecutionPlan p = h.plan;
    p.ga_steps = h.groups[k].ga_steps;
    Workload w = workload;
    w.global_batch = p.global_batch();
    const double ms = predict_iteration(iteration_terms(w, p, as_k, perf.forward), perf.params).iter_ms;
    EXPECT_NEAR(h.group_ms[k], ms, 1e-9 * ms) << k;
  }
  EXPECT_DOUBLE_EQ(h.iter_ms, std::max(h.group_ms[0], h.group_ms[1]));
  EXPECT_NEAR(h.throughput, 256 / (h.iter_ms / 1e3), 1e-9);
  // No slower than the best data-parallel plan that splits the batch evenly over the same
  // GPUs (which runs at the V100s' pace).
  PlanSearchOptions dp_only = options;
  dp_only.features = kFeatureZero;
  const PlanSearch even = search_plans(workload, a, perf, dp_only);
  ASSERT_FALSE(even.feasible.empty());
  EXPECT_LT(h.iter_ms, even.feasible.front().time.iter_ms);
}

TEST_F(HeteroPlanTest, NeedsTwoTypesAndTheSameGpusPerNode) {
  HeteroPlan h = best_hetero_plan(workload, parse_gpus_spec("2x4xa100", config.cluster, "test"), perf, options);
  EXPECT_FALSE(h.feasible);
  EXPECT_NE(h.reason.find("one GPU type"), std::string::npos) << h.reason;
  h = best_hetero_plan(workload, parse_gpus_spec("1x8xa100+1x4xv100", config.cluster, "test"), perf, options);
  EXPECT_FALSE(h.feasible);
  EXPECT_NE(h.reason.find("different GPU counts"), std::string::npos) << h.reason;
  // 8 GPUs cannot share a batch of 4.
  Workload tiny = workload;
  tiny.global_batch = 4;
  h = best_hetero_plan(tiny, parse_gpus_spec("1x4xa100+1x4xv100", config.cluster, "test"), perf, options);
  EXPECT_FALSE(h.feasible);
  EXPECT_NE(h.reason.find("no local batch"), std::string::npos) << h.reason;
}

// A record holds at most MORPH_MAX_PLAN_VALUE accumulation steps per group (its groups=
// parser refuses more), as search_plans keeps its own plans within them. One micro-batch
// of one sample on an A100 and a V100: a batch of 2 x 2^20 splits only as 2^20 + 2^20
// (unbounded, the faster A100 would take more than 2^20), and 2 more samples split not at all.
TEST_F(HeteroPlanTest, AccumulationStepsStayWithinWhatARecordHolds) {
  const Allocation a = parse_gpus_spec("1x1xa100+1x1xv100", config.cluster, "test");
  PlanSearchOptions one_sample = options;
  one_sample.max_micro_batch_size = 1;
  Workload w = workload;
  w.global_batch = 2 * std::int64_t{MORPH_MAX_PLAN_VALUE};
  HeteroPlan h = best_hetero_plan(w, a, perf, one_sample);
  ASSERT_TRUE(h.feasible) << h.reason;
  ASSERT_EQ(h.groups.size(), 2u);
  EXPECT_EQ(h.groups[0].ga_steps, MORPH_MAX_PLAN_VALUE);
  EXPECT_EQ(h.groups[1].ga_steps, MORPH_MAX_PLAN_VALUE);
  w.global_batch += 2;
  h = best_hetero_plan(w, a, perf, one_sample);
  EXPECT_FALSE(h.feasible);
  EXPECT_NE(h.reason.find("more than 1048576 accumulation steps"), std::string::npos) << h.reason;
}

// Three GPU types, where trying every split took minutes (a batch of 16,384 on one GPU of
// each): the plan is the one an exhaustive search over local batches, ZeRO stages and
// splits (in that order, the first of the least time) finds, timed as hetero_iteration_ms.
TEST_F(HeteroPlanTest, ThreeTypesGetTheBestSplitWithoutTryingEach) {
  const MorphConfig three = parse_morph_conf(
      "GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n"
      "GpuType=v100-32g MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=120 PcieBandwidthGBps=12\n"
      "GpuType=h100 MemoryGiB=80 Speed=2.8 PeakTflops=989 Link=nvlink LinkBandwidthGBps=360 PcieBandwidthGBps=48\n"
      "NodeType=a Gpu=a100-80g Gpus=2 Cpus=16 MemoryGiB=256 NetworkBandwidthGBps=25\n"
      "NodeType=v Gpu=v100-32g Gpus=2 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25\n"
      "NodeType=h Gpu=h100 Gpus=2 Cpus=16 MemoryGiB=256 NetworkBandwidthGBps=25\n",
      "three.conf");
  PlanSearchOptions small = options;
  small.max_micro_batch_size = 4;
  for (const char* spec : {"1x2xa100-80g+1x2xv100-32g+1x2xh100", "1x2xa100-80g+2x2xv100-32g+1x2xh100"})
    for (const std::int64_t batch : {96, 120}) {
      const Allocation a = parse_gpus_spec(spec, three.cluster, "test");
      Workload w = workload;
      w.global_batch = batch;
      const HeteroPlan h = best_hetero_plan(w, a, perf, small);
      ASSERT_TRUE(h.feasible) << h.reason;
      double least = 0;
      GpuGroups first;
      ExecutionPlan plan, first_plan;
      plan.dp = a.gpus();
      for (plan.micro_batch_size = 1; plan.micro_batch_size <= 4; ++plan.micro_batch_size)
        for (plan.zero_stage = 0; plan.zero_stage <= 1; ++plan.zero_stage) {
          const std::int64_t steps = batch / plan.micro_batch_size;
          if (batch % plan.micro_batch_size != 0) continue;
          for (int a0 = 1; 2 * a0 < steps; ++a0)
            for (int a1 = 1; 2 * a0 + (a.gpus() - 4) * a1 < steps; ++a1) {
              const std::int64_t left = steps - 2 * a0 - (a.gpus() - 4) * a1;
              if (left < 2 || left % 2 != 0) continue;
              const GpuGroups g = {{"a100-80g", 1, 1, a0}, {"v100-32g", (a.gpus() - 4) / 2, 1, a1},
                                   {"h100", 1, 1, static_cast<int>(left / 2)}};
              const double ms = hetero_iteration_ms(w, a, perf, plan, g, options.memory);
              if (ms > 0 && (first.empty() || ms < least)) {
                least = ms;
                first = g;
                first_plan = plan;
              }
            }
        }
      EXPECT_DOUBLE_EQ(h.iter_ms, least) << spec << " batch " << batch;
      EXPECT_EQ(h.plan.micro_batch_size, first_plan.micro_batch_size) << spec << " batch " << batch;
      EXPECT_EQ(h.plan.zero_stage, first_plan.zero_stage) << spec << " batch " << batch;
      ASSERT_EQ(h.groups.size(), 3u);
      for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(h.groups[k].ga_steps, first[k].ga_steps) << spec << " " << batch;
    }
}

}  // namespace
}  // namespace morph
