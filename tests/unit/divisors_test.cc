#include "libmorph/util/divisors.h"

#include <gtest/gtest.h>

namespace morph {
namespace {

TEST(Divisors, AreIncreasingAndWhole) {
  EXPECT_EQ(divisors(1), (std::vector<int>{1}));
  EXPECT_EQ(divisors(36), (std::vector<int>{1, 2, 3, 4, 6, 9, 12, 18, 36}));
  EXPECT_EQ(divisors(13), (std::vector<int>{1, 13}));
  // Above INT_MAX a divisor is no micro-batch size: left out, the rest kept.
  const std::int64_t big = std::int64_t{1} << 33;
  const std::vector<int> d = divisors(big);
  EXPECT_EQ(d.size(), 31u);
  EXPECT_EQ(d.back(), 1 << 30);
}

TEST(Divisors, TheLargestAtMostACap) {
  EXPECT_EQ(largest_divisor_at_most(24, 8), 8);
  EXPECT_EQ(largest_divisor_at_most(24, 7), 6);
  EXPECT_EQ(largest_divisor_at_most(25, 8), 5);
  EXPECT_EQ(largest_divisor_at_most(13, 12), 1);
  EXPECT_EQ(largest_divisor_at_most(6, 100), 6);
}

}  // namespace
}  // namespace morph
