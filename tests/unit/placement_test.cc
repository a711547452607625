// Frenzy's heterogeneity-aware placement (HAS, seed 002 §IV-B) on the free-GPU pool.
#include "libmorph/policy/placement.h"

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "policy_support.h"

namespace morph::policy {
namespace {

int total(const std::vector<Slice>& slices) {
  int g = 0;
  for (const Slice& s : slices) g += s.gpus;
  return g;
}

// Three big nodes with 8, 3 and 5 free GPUs.
class HasTest : public ::testing::Test {
 protected:
  HasTest() : nodes_(test::nodes("3x8xbig")), pool_(nodes_) {
    pool_.take(Slice{1, 5, 0, 0});
    pool_.take(Slice{2, 3, 0, 0});
  }
  std::vector<NodeState> nodes_;
  NodePool pool_;
};

TEST_F(HasTest, PicksTheSingleNodeThatFitsBest) {
  const std::vector<Slice> three = pool_.place(0, 3);
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(three[0].node, 1);  // exactly 3 free
  const std::vector<Slice> four = pool_.place(0, 4);
  ASSERT_EQ(four.size(), 1u);
  EXPECT_EQ(four[0].node, 2);  // 5 free: the tightest that holds 4
  const std::vector<Slice> six = pool_.place(0, 6);
  ASSERT_EQ(six.size(), 1u);
  EXPECT_EQ(six[0].node, 0);
}

TEST_F(HasTest, SpreadsOverTheFewestNodes) {
  const std::vector<Slice> ten = pool_.place(0, 10);
  ASSERT_EQ(ten.size(), 2u);  // the free node whole, the rest best fit
  EXPECT_EQ(total(ten), 10);
  EXPECT_EQ(ten[0].node, 0);
  EXPECT_EQ(ten[0].gpus, 8);
  EXPECT_EQ(ten[1].node, 1);
  EXPECT_EQ(pool_.place(0, 16).size(), 3u);
  EXPECT_TRUE(pool_.place(0, 17).empty());
}

// A job of partitions that hold some nodes (JobState::nodes_allowed) is placed on them
// only, by the same rule; a job elsewhere frees room for it only where it may run.
TEST_F(HasTest, PlacesAJobOnlyOnTheNodesItMayRunOn) {
  const std::vector<bool> not_the_tightest = {true, false, true};
  const std::vector<Slice> three = pool_.place(0, 3, &not_the_tightest);
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(three[0].node, 2);  // node 1 fits best, but the job may not run there
  const std::vector<bool> only_node_1 = {false, true, false};
  EXPECT_TRUE(pool_.place(0, 4, &only_node_1).empty());  // 3 free there
  const std::vector<Slice> spread = pool_.place(0, 11, &not_the_tightest);
  ASSERT_EQ(spread.size(), 2u);
  EXPECT_EQ(total(spread), 11);
  for (const Slice& sl : spread) EXPECT_NE(sl.node, 1);
  const std::vector<bool> every = {};
  EXPECT_EQ(pool_.place(0, 3, &every)[0].node, 1);
  JobState job;
  job.nodes_allowed = only_node_1;
  EXPECT_TRUE(frees_room_for(job, JobAllocation{{Slice{1, 2, 0, 0}, Slice{2, 2, 0, 0}}, {}}));
  EXPECT_FALSE(frees_room_for(job, JobAllocation{{Slice{0, 8, 0, 0}}, {}}));
  EXPECT_TRUE(frees_room_for(job, JobAllocation{}));
  job.nodes_allowed.clear();
  EXPECT_TRUE(frees_room_for(job, JobAllocation{{Slice{0, 8, 0, 0}}, {}}));
}

TEST_F(HasTest, TracksWhatIsFreeAndRefusesOverAllocation) {
  EXPECT_EQ(pool_.free_gpus_of_type(0), 16);
  pool_.take(pool_.place(0, 3));
  EXPECT_EQ(pool_.free_gpus(1), 0);
  EXPECT_EQ(pool_.place(0, 3)[0].node, 2);  // now the 5-free node fits best
  EXPECT_THROW(pool_.take(Slice{1, 1, 0, 0}), Error);
  EXPECT_THROW(pool_.take(Slice{0, 1, 65, 0}), Error);  // more CPUs than the node has
  pool_.give(Slice{1, 2, 0, 0});
  EXPECT_EQ(pool_.free_gpus(1), 2);
  EXPECT_THROW(pool_.give(Slice{0, 1, 0, 0}), Error);  // node 0 is all free already
}

TEST(Has, GpuTypesAreTriedSmallestMemoryFirst) {
  const std::vector<NodeState> nodes = test::nodes("1x8xbig+2x4xsmall");
  const NodePool pool(nodes);
  ASSERT_EQ(pool.types(), 2);
  const int first = pool.types_by_memory().front();
  EXPECT_EQ(pool.type_name(first), "smallnode");
  EXPECT_EQ(pool.capacity(first), 8);
  EXPECT_EQ(pool.gpus_per_node(first), 4);
  for (const Slice& s : pool.place(first, 6)) EXPECT_EQ(pool.type_of(s.node), first);
}

TEST(Has, AClusterWithoutGpusIsAnError) {
  EXPECT_THROW(NodePool(std::vector<NodeState>{}), Error);
  EXPECT_THROW(test::nodes("8x0xbig"), Error);
}

}  // namespace
}  // namespace morph::policy
