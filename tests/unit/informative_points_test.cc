// The greedy D-optimal choice of informative points, on hand-computed sensitivities.
#include "libmorph/perf/informative_points.h"

#include <algorithm>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

// As iteration_time_test: l=2, h=1000, s=100, P=1e8, global batch 8, 10 ms per sample.
Workload workload() { return Workload{ModelSpec{"m", 2, 1000, 10, 100, 0, 1e8}, 8, 100}; }
const ForwardModel kForward{0, 10, 1};
const PerfParams kParams{2, 1, 0.1, 2, 1, 1, 5};

IterationTerms dp_on(const char* spec) {
  return iteration_terms(workload(), test::make_plan(4, 1, 1, 2, 1, 1),
                         parse_gpus_spec(spec, test::test_cluster(), "--gpus"), kForward);
}

TEST(InformativePoints, SensitivityIsTheParametersShareOfTheIteration) {
  // DP on 4 GPUs of a node: T = 78 ms (iteration_time_test), of which k_const = 5 and
  // k_bwd's backward passes 2 * 20 / 2 per step, 40 in all: dT/dk_bwd = 20.
  const Eigen::VectorXd g = log_sensitivity(dp_on("4xbig"), kParams);
  ASSERT_EQ(g.size(), static_cast<Eigen::Index>(PerfParams::kCount));
  EXPECT_NEAR(g[6], (5 + prior_floor(6)) / 78, 1e-5);       // k_const, floor 10 ms
  EXPECT_NEAR(g[0], (2 + prior_floor(0)) * 20 / 78, 1e-4);  // k_bwd
  EXPECT_NEAR(g[10], 0, 1e-12);                             // k_net: no network
  EXPECT_NEAR(g[3], 0, 1e-12);                              // k_opt_off: no offloading
}

TEST(InformativePoints, APointOnAnUninformedParameterComesFirst) {
  // Fitted on one node; the candidates: that point again, and DP across two nodes
  // (k_net, which nothing fitted informs), twice.
  const std::vector<IterationTerms> fitted{dp_on("4xbig"), dp_on("4xbig"), dp_on("4xbig")};
  const std::vector<IterationTerms> candidates{dp_on("4xbig"), dp_on("2x2xbig"), dp_on("2x2xbig")};
  const std::vector<std::size_t> one = most_informative(fitted, candidates, {true, true, true}, kParams, 0.3, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], 1u);  // across nodes; of the two equal ones, the first
  const std::vector<std::size_t> all = most_informative(fitted, candidates, {true, true, true}, kParams, 0.3, 5);
  EXPECT_EQ(all.size(), 3u);  // each once, then no candidate is left
  EXPECT_EQ(all[0], 1u);
  const std::vector<std::size_t> without = most_informative(fitted, candidates, {true, false, true}, kParams, 0.3, 1);
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(without[0], 2u);  // the ineligible one is never chosen
}

TEST(InformativePoints, TheSecondChoiceTeachesWhatTheFirstDidNot) {
  // After one DP point across nodes, its twin is worth less (variance v / (1 + v) < 1)
  // than a pipeline, whose forward factor k_fwd_mp alone is worth (d log T / d log k)^2
  // / w^2 > 0.5^2 / 0.09 with nothing fitted on it.
  const std::vector<IterationTerms> fitted{dp_on("4xbig")};
  const IterationTerms pipeline = iteration_terms(workload(), test::make_plan(1, 1, 4, 1, 4, 2),
                                                  parse_gpus_spec("2x2xbig", test::test_cluster(), "--gpus"), kForward);
  EXPECT_GT(log_sensitivity(pipeline, kParams)[14], 0.5);
  const std::vector<IterationTerms> candidates{dp_on("2x2xbig"), dp_on("2x2xbig"), pipeline};
  const std::vector<std::size_t> two = most_informative(fitted, candidates, {true, true, true}, kParams, 0.3, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(std::count(two.begin(), two.end(), 2u), 1);
  EXPECT_EQ(std::count(two.begin(), two.end(), 0u) + std::count(two.begin(), two.end(), 1u), 1);
}

// A candidate whose prediction is not finite was taken first (best == none took it) and
// its NaNs then went into the information matrix of every later choice.
TEST(InformativePoints, ACandidateWithoutAFinitePredictionIsNeverChosen) {
  const std::vector<IterationTerms> fitted{dp_on("4xbig")};
  IterationTerms broken = dp_on("4xbig");
  broken.forward_ms = std::numeric_limits<double>::infinity();
  const std::vector<IterationTerms> candidates{broken, dp_on("2x2xbig"), dp_on("4xbig")};
  const std::vector<std::size_t> all = most_informative(fitted, candidates, {true, true, true}, kParams, 0.3, 3);
  EXPECT_EQ(all, (std::vector<std::size_t>{1, 2}));
}

TEST(InformativePoints, RefusesAFlatPrior) {
  const std::vector<IterationTerms> none;
  EXPECT_THROW(most_informative(none, none, {}, kParams, 0, 1), Error);
  const std::vector<IterationTerms> one{dp_on("4xbig")};
  EXPECT_THROW(most_informative(none, one, {}, kParams, 0.3, 1), Error);
}

}  // namespace
}  // namespace morph
