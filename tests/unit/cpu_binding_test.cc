#include "libmorph/launch/cpu_binding.h"

#include <numeric>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"

namespace morph::launch {
namespace {

std::vector<int> range(int begin, int end) {
  std::vector<int> v(static_cast<std::size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// Two NUMA nodes of 8 CPUs; GPUs 0,1 near node 0 and GPUs 2,3 near node 1.
std::vector<GpuLocality> two_socket_gpus() {
  return {{0, 0, range(0, 8)}, {1, 0, range(0, 8)}, {2, 1, range(8, 16)}, {3, 1, range(8, 16)}};
}

TEST(CpuBinding, RanksSplitTheCpusLocalToTheirGpu) {
  const auto b = bind_ranks(two_socket_gpus(), range(0, 16), {0, 1, 2, 3});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].cpus, range(0, 4));
  EXPECT_EQ(b[1].cpus, range(4, 8));
  EXPECT_EQ(b[2].cpus, range(8, 12));
  EXPECT_EQ(b[3].cpus, range(12, 16));
  EXPECT_EQ(b[0].numa_node, 0);
  EXPECT_EQ(b[3].numa_node, 1);
}

TEST(CpuBinding, OnlyRanksOnTheSameLocalitySplitIt) {
  // One rank per NUMA node: each gets its whole node.
  const auto b = bind_ranks(two_socket_gpus(), range(0, 16), {1, 2});
  EXPECT_EQ(b[0].cpus, range(0, 8));
  EXPECT_EQ(b[1].cpus, range(8, 16));
}

TEST(CpuBinding, LocalCpusAreIntersectedWithTheAllowedOnes) {
  const auto b = bind_ranks(two_socket_gpus(), {2, 3, 4, 9, 10}, {0, 1, 2});
  EXPECT_EQ(b[0].cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(b[1].cpus, (std::vector<int>{4}));
  EXPECT_EQ(b[2].cpus, (std::vector<int>{9, 10}));
}

TEST(CpuBinding, UnknownLocalitySplitsAllAllowedCpusEvenly) {
  const auto b = bind_ranks({}, range(0, 10), {0, 1, 2, 3});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].cpus, range(0, 3));
  EXPECT_EQ(b[1].cpus, range(3, 6));
  EXPECT_EQ(b[2].cpus, range(6, 8));
  EXPECT_EQ(b[3].cpus, range(8, 10));
  for (const auto& r : b) EXPECT_EQ(r.numa_node, -1);
}

TEST(CpuBinding, GpuWhoseLocalCpusAreNotAllowedFallsBack) {
  // GPU 2's CPUs (8..15) are outside the step's affinity.
  const auto b = bind_ranks(two_socket_gpus(), range(0, 8), {0, 2});
  EXPECT_EQ(b[0].cpus, range(0, 8));
  EXPECT_EQ(b[0].numa_node, 0);
  EXPECT_EQ(b[1].cpus, range(4, 8));  // block 1 of 2 of the allowed CPUs
  EXPECT_EQ(b[1].numa_node, -1);
}

TEST(CpuBinding, FewerCpusThanRanksShareButNeverEmpty) {
  const auto b = bind_ranks({}, {5, 7}, {0, 1, 2, 3, 4});
  ASSERT_EQ(b.size(), 5u);
  for (const auto& r : b) ASSERT_EQ(r.cpus.size(), 1u);
  EXPECT_EQ(b[0].cpus[0], 5);
  EXPECT_EQ(b[4].cpus[0], 7);
}

TEST(CpuBinding, UnsortedDuplicateAllowedCpusAreNormalised) {
  const auto b = bind_ranks({}, {3, 1, 2, 1, 0}, {0, 1});
  EXPECT_EQ(b[0].cpus, range(0, 2));
  EXPECT_EQ(b[1].cpus, range(2, 4));
}

TEST(CpuBinding, EmptyAffinityIsAnError) {
  EXPECT_THROW(bind_ranks(two_socket_gpus(), {}, {0}), Error);
}

}  // namespace
}  // namespace morph::launch
