// JABAS Eq. (1)-(6) on the tiny profile, term by term, against hand-computed numbers.
#include <gtest/gtest.h>

#include <cmath>

#include "libmorph/hetero/hetero_search.h"
#include "libmorph/hetero/iteration_model.h"
#include "libmorph/util/error.h"
#include "tests/unit/hetero_support.h"

namespace morph {
namespace {

constexpr double kMiB = 1048576.0;

TEST(HeteroIterationModel, AllreduceFitAndBuckets) {
  const JabasProfile p = load_jabas_profile(test::write_tiny_profile("allreduce").string());
  const AllreduceFit intra = fit_allreduce(p.intra);
  EXPECT_NEAR(intra.alpha, 1, 1e-12);
  EXPECT_NEAR(intra.beta_ms, 1, 1e-12);
  // Eq. (3): 10 MiB among 2 GPUs at 1 GB/s: 10 MiB * 4 * 1/2 / 1e9 B/s = 20.97152 ms.
  EXPECT_NEAR(ideal_allreduce_ms(10 * kMiB, 2, 1e9), 20.97152, 1e-9);
  // One server: intra; buckets 10 + 20 under the backward pass, 10 after it.
  BucketAllreduce one = bucket_allreduce(p, *p.find("fast"), 2, 1);
  EXPECT_NEAR(one.overlapped_ms, 30 * 2.097152 + 2, 1e-9);
  EXPECT_NEAR(one.last_ms, 10 * 2.097152 + 1, 1e-9);
  // Two servers, 4 GPUs: inter fit 2x + 1 at 0.5 GB/s: 1 MiB -> 1 MiB * 4 * 3/4 / 5e8 = 6.291456 ms.
  BucketAllreduce two = bucket_allreduce(p, *p.find("fast"), 4, 2);
  EXPECT_NEAR(two.overlapped_ms, 2 * 30 * 6.291456 + 2, 1e-9);
  EXPECT_NEAR(two.last_ms, 2 * 10 * 6.291456 + 1, 1e-9);
  EXPECT_EQ(choose_weight_sync(p.bucket_mib), WeightSync::overlap);
  EXPECT_DOUBLE_EQ(update_share(p.bucket_mib, WeightSync::overlap), 0.25);
  EXPECT_EQ(choose_weight_sync({100, 10}), WeightSync::sequential);

  // A negative intercept never makes a bucket take negative time; falling times are refused.
  EXPECT_DOUBLE_EQ((AllreduceFit{2, -5}).predict_ms(1), 0);
  EXPECT_DOUBLE_EQ((AllreduceFit{2, -5}).predict_ms(4), 3);
  const AllreduceSamples falling{{1, 2}, {1000, 0}, "intra_comm_profile_data.txt"};
  try {
    fit_allreduce(falling);
    FAIL() << "a fit of falling times was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("intra_comm_profile_data.txt: measured all-reduce times do not rise"),
              std::string::npos)
        << e.what();
  }
}

TEST(HeteroIterationModel, ThroughputFitAndIterationTime) {
  const JabasProfile p = load_jabas_profile(test::write_tiny_profile("model").string());
  const GpuIterationModel m = gpu_iteration_model(p, *p.find("fast"), 8, 2, 1);
  // Eq. (1): thp(2)/thp(1) = (16/48) / (8/30) = 1.25 -> alpha = 0.25 / ln 2, beta = 1.
  EXPECT_NEAR(m.throughput.alpha, 0.25 / std::log(2.0), 1e-12);
  EXPECT_NEAR(m.throughput.beta, 1, 1e-12);
  // Eq. (2): t_vsw(2) = 8 * 2 / (1.25 * 8/30) = 48 ms, t_vsw(1) = 30 ms.
  EXPECT_NEAR(m.fwd_bwd_ms(2), 48, 1e-9);
  EXPECT_NEAR(m.fwd_bwd_ms(1), 30, 1e-9);
  EXPECT_NEAR(m.fwd_ratio, 16.0 / 48.0, 1e-12);
  EXPECT_DOUBLE_EQ(m.copy_ms, 2);
  const double overlapped = 30 * 2.097152 + 2, last = 10 * 2.097152 + 1;
  // Eq. (6), 2 workers, no accumulation: data 2 + bn 2 * 0.5 + fwd 16 + max(bwd 32, comm)
  // + last bucket + tau (4 + 2 * 1).
  EXPECT_NEAR(m.iteration_ms(2, 1), 2 + 1 + 16 + std::max(32.0, overlapped) + last + 0.25 * 6, 1e-9);
  // 1 worker, 2 accumulation steps: data 1 + bn 0.5 + (1 + 30) + fwd 10 + max(20, comm) + last + tau * 4.
  EXPECT_NEAR(m.iteration_ms(1, 2), 1 + 0.5 + 31 + 10 + std::max(20.0, overlapped) + last + 0.25 * 4, 1e-9);
  // Three workers were never profiled: data time is 3 * data(1).
  EXPECT_DOUBLE_EQ(m.data_time_ms(3), 3);
  EXPECT_NEAR(m.step_ms(2), 2 + 48, 1e-9);
}

TEST(HeteroIterationModel, GpuKindsAreLinearInAccumulation) {
  const JabasProfile p = load_jabas_profile(test::write_tiny_profile("kinds").string());
  const std::vector<const JabasServer*> servers{p.find("fast"), p.find("slow")};
  const std::vector<GpuIterationModel> models = server_models(p, whole_servers(servers), 8);
  const std::vector<GpuKindTimes> kinds = gpu_kinds(models, whole_servers(servers), 5);
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].fixed_ms.size(), 2u);  // n_max 2
  EXPECT_EQ(kinds[1].fixed_ms.size(), 1u);  // n_max 1
  EXPECT_EQ(kinds[0].count, 1);             // one pair
  for (int ga = 1; ga <= 4; ++ga)
    EXPECT_NEAR(kinds[0].fixed_ms[1] + kinds[0].step_ms[1] * (ga - 1), models[0].iteration_ms(2, ga), 1e-9);
}

}  // namespace
}  // namespace morph
