// The worker-split solver against exhaustive search on small random instances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "libmorph/hetero/config_solver.h"

namespace morph {
namespace {

double time_of(const GpuKindTimes& k, int n, int ga_steps) {
  return k.fixed_ms[static_cast<std::size_t>(n - 1)] + k.step_ms[static_cast<std::size_t>(n - 1)] * (ga_steps - 1);
}

// Every (n_vsw, ga_steps) on every GPU whose worker counts sum to M: the least bottleneck.
double brute_force(const std::vector<GpuKindTimes>& kinds, int m) {
  std::vector<int> gpu_kind;
  for (std::size_t i = 0; i < kinds.size(); ++i)
    for (int c = 0; c < kinds[i].count; ++c) gpu_kind.push_back(static_cast<int>(i));
  double best = std::numeric_limits<double>::infinity();
  std::function<void(std::size_t, int, double)> visit = [&](std::size_t g, int left, double worst) {
    if (g == gpu_kind.size()) {
      if (left == 0) best = std::min(best, worst);
      return;
    }
    const GpuKindTimes& k = kinds[static_cast<std::size_t>(gpu_kind[g])];
    for (int n = 1; n <= static_cast<int>(k.fixed_ms.size()); ++n)
      for (int a = 1; n * a <= left; ++a) visit(g + 1, left - n * a, std::max(worst, time_of(k, n, a)));
  };
  visit(0, m, 0);
  return best;
}

GpuKindTimes random_kind(std::mt19937& rng, int count) {
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::uniform_int_distribution<int> n_max(1, 4);
  GpuKindTimes k;
  k.count = count;
  const double base = u(rng) * 10;
  for (int n = 1, top = n_max(rng); n <= top; ++n) {
    // More workers per GPU: better throughput per worker, or sometimes worse.
    k.step_ms.push_back(base * n * u(rng) * 0.8);
    k.fixed_ms.push_back(base * u(rng) + k.step_ms.back());
  }
  return k;
}

TEST(HeteroSolver, MatchesExhaustiveSearch) {
  std::mt19937 rng(15);
  std::uniform_int_distribution<int> kinds_dist(1, 3), count_dist(1, 2), m_dist(1, 12);
  int feasible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<GpuKindTimes> kinds;
    for (int i = 0, n = kinds_dist(rng); i < n; ++i) kinds.push_back(random_kind(rng, count_dist(rng)));
    const int m = m_dist(rng);
    const double expected = brute_force(kinds, m);
    const WorkerSplit split = solve_worker_split(kinds, m);
    if (std::isinf(expected)) {
      EXPECT_FALSE(split.feasible()) << "trial " << trial;
      continue;
    }
    ++feasible;
    ASSERT_TRUE(split.feasible()) << "trial " << trial;
    EXPECT_DOUBLE_EQ(split.iter_ms, expected) << "trial " << trial << " M " << m;
    int workers = 0;
    double worst = 0;
    for (const GpuWorkers& g : split.gpus) {
      workers += g.workers * g.ga_steps;
      EXPECT_LE(g.workers, static_cast<int>(kinds[static_cast<std::size_t>(g.kind)].fixed_ms.size()));
      EXPECT_DOUBLE_EQ(g.iter_ms, time_of(kinds[static_cast<std::size_t>(g.kind)], g.workers, g.ga_steps));
      worst = std::max(worst, g.iter_ms);
    }
    EXPECT_EQ(workers, m) << "trial " << trial;
    EXPECT_DOUBLE_EQ(worst, split.iter_ms);
  }
  EXPECT_GT(feasible, 200);
}

TEST(HeteroSolver, NeedsOneWorkerPerGpu) {
  GpuKindTimes k{{10, 15}, {10, 15}, 3};
  EXPECT_FALSE(solve_worker_split({k}, 2).feasible());
  const WorkerSplit split = solve_worker_split({k}, 3);
  ASSERT_TRUE(split.feasible());
  EXPECT_DOUBLE_EQ(split.iter_ms, 10);
}

// A worker count that only an odd choice reaches: 7 workers on one GPU with n_max 2 need
// n_vsw 1 and 7 steps, though 8 (n_vsw 2, 4 steps) would be faster.
TEST(HeteroSolver, KeepsTheExactWorkerCount) {
  GpuKindTimes k{{10, 12}, {10, 11}, 1};
  const WorkerSplit split = solve_worker_split({k}, 7);
  ASSERT_TRUE(split.feasible());
  EXPECT_EQ(split.gpus[0].workers, 1);
  EXPECT_EQ(split.gpus[0].ga_steps, 7);
  EXPECT_DOUBLE_EQ(split.iter_ms, 70);
}

}  // namespace
}  // namespace morph
