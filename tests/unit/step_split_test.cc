// Splitting accumulation steps over GPU types (libmorph/planner/step_split.h), against
// hand-worked splits and an exhaustive search.
#include "libmorph/planner/step_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

namespace morph {
namespace {

using Steps = std::vector<std::int64_t>;

TEST(StepSplit, FirstSplitIsTheLexicographicallyFirstWithinTheBounds) {
  // 2 a0 + 3 a1 = 12: a0 = 1 and 2 leave 10 and 8, which 3 does not divide.
  EXPECT_EQ(first_split({2, 3}, {10, 10}, 12), (Steps{3, 2}));
  EXPECT_EQ(first_split({2, 3}, {2, 10}, 12), Steps{});  // a0 <= 2 leaves no multiple of 3
  EXPECT_EQ(first_split({2, 4}, {10, 10}, 7), Steps{});  // 7 is odd
  // a0 = 1 would need a1 + a2 = 9 with a1, a2 <= 4.
  EXPECT_EQ(first_split({1, 1, 1}, {10, 4, 4}, 10), (Steps{2, 4, 4}));
  EXPECT_EQ(first_split({1, 1}, {1, 1}, 3), Steps{});
}

TEST(StepSplit, TheSlowestGroupIsAsFastAsItCanBe) {
  // a0 + a1 = 10, times a0 and 4 a1: 8 and 2 take 8 each.
  EXPECT_EQ(least_slowest_split({1, 1}, 100, 10, [](std::size_t k, std::int64_t a) { return double(k == 0 ? a : 4 * a); }),
            (Steps{8, 2}));
  // a0 + 2 a1 + a2 = 20 with times 3 + a0, 1 + 2 a1 and 5 a2: 8, 5, 2 take 11, 11 and 10.
  const double k0[] = {3, 1, 0}, k1[] = {1, 2, 5};
  EXPECT_EQ(least_slowest_split({1, 2, 1}, 100, 20,
                                [&](std::size_t k, std::int64_t a) { return k0[k] + k1[k] * static_cast<double>(a); }),
            (Steps{8, 5, 2}));
  // Every split ties: the first.
  EXPECT_EQ(least_slowest_split({1, 1}, 100, 4, [](std::size_t, std::int64_t) { return 1.0; }), (Steps{1, 3}));
  // No split: an odd count of steps over even groups, or steps beyond `most`.
  EXPECT_EQ(least_slowest_split({2, 4}, 100, 7, [](std::size_t, std::int64_t a) { return double(a); }), Steps{});
  EXPECT_EQ(least_slowest_split({1, 1}, 3, 7, [](std::size_t, std::int64_t a) { return double(a); }), Steps{});
}

// What best_hetero_plan did before: every split, lexicographically, keeping the first of
// the least slowest time.
Steps exhaustive(const Steps& gpus, std::int64_t most, std::int64_t steps,
                 const std::function<double(std::size_t, std::int64_t)>& time) {
  Steps a(gpus.size()), best;
  double least = std::numeric_limits<double>::infinity();
  std::function<void(std::size_t, std::int64_t)> split = [&](std::size_t k, std::int64_t left) {
    if (k + 1 == gpus.size()) {
      if (left % gpus[k] != 0 || left / gpus[k] < 1 || left / gpus[k] > most) return;
      a[k] = left / gpus[k];
      double slowest = 0;
      for (std::size_t j = 0; j < gpus.size(); ++j) slowest = std::max(slowest, time(j, a[j]));
      if (best.empty() || slowest < least) {
        least = slowest;
        best = a;
      }
      return;
    }
    std::int64_t rest = 0;
    for (std::size_t j = k + 1; j < gpus.size(); ++j) rest += gpus[j];
    for (a[k] = 1; a[k] <= most && gpus[k] * a[k] + rest <= left; ++a[k]) split(k + 1, left - gpus[k] * a[k]);
  };
  split(0, steps);
  return best;
}

TEST(StepSplit, FindsWhatEverySplitTriedFinds) {
  std::mt19937 random(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(random); };
  for (int round = 0; round < 400; ++round) {
    Steps gpus(static_cast<std::size_t>(pick(2, 4)));
    for (std::int64_t& g : gpus) g = pick(1, 6);
    const std::int64_t most = pick(1, 30), steps = pick(1, 90);
    // Nondecreasing times with plateaus (ties) and a constant part, as group times have.
    std::vector<std::vector<double>> table(gpus.size(), std::vector<double>(static_cast<std::size_t>(most) + 1));
    for (auto& t : table) {
      t[0] = pick(0, 5);
      for (std::size_t a = 1; a < t.size(); ++a) t[a] = t[a - 1] + pick(0, 3);
    }
    const auto time = [&](std::size_t k, std::int64_t a) { return table[k][static_cast<std::size_t>(a)]; };
    ASSERT_EQ(least_slowest_split(gpus, most, steps, time), exhaustive(gpus, most, steps, time))
        << "round " << round << ", " << gpus.size() << " types, " << steps << " steps, most " << most;
  }
}

}  // namespace
}  // namespace morph
