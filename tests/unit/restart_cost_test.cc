// The path a change takes (the one classification morphd and the policies share) and
// what each path costs.
#include <gtest/gtest.h>

#include "libmorph/policy/restart_cost.h"
#include "libmorph/util/error.h"
#include "policy_support.h"

namespace morph::policy {
namespace {

TEST(ChangePath, FollowsTheShapeOfTheNodes) {
  const NodeShape two_by_four{"a100", 2, 4, 8, true};
  EXPECT_EQ(change_path({}, two_by_four), ChangePath::start);
  EXPECT_EQ(change_path(two_by_four, two_by_four), ChangePath::inplace);
  EXPECT_EQ(change_path(two_by_four, {"a100", 1, 4, 8, true}), ChangePath::shrink);
  EXPECT_EQ(change_path(two_by_four, {"a100", 3, 4, 8, true}), ChangePath::requeue);    // grow
  EXPECT_EQ(change_path(two_by_four, {"a100", 1, 2, 8, true}), ChangePath::requeue);    // fewer per node
  EXPECT_EQ(change_path(two_by_four, {"v100", 2, 4, 8, true}), ChangePath::requeue);    // another type
  EXPECT_EQ(change_path(two_by_four, {"a100", 2, 4, 16, true}), ChangePath::requeue);   // other CPUs
  EXPECT_EQ(change_path(two_by_four, {"a100", 1, 4, 8, false}), ChangePath::requeue);   // uneven nodes
}

TEST(ChangePath, NodeShapeOfSlices) {
  const std::vector<NodeState> nodes = test::nodes("3x8xbig");
  const NodeShape s = node_shape(nodes, {Slice{0, 4, 32, 0}, Slice{2, 4, 32, 0}});
  EXPECT_EQ(s, (NodeShape{nodes[0].gpu.name, 2, 4, 8, true}));
  EXPECT_FALSE(node_shape(nodes, {Slice{0, 4, 32, 0}, Slice{1, 2, 16, 0}}).uniform);
  EXPECT_EQ(node_shape(nodes, {}).nodes, 0);
}

TEST(ChangePath, APreemptedJobComesBackAsARequeue) {
  JobState j = test::job("j", Sla::best_effort, 2, 100);
  EXPECT_EQ(start_path(j), ChangePath::start);
  j.restarts = 1;
  EXPECT_EQ(start_path(j), ChangePath::requeue);
}

// Slurm without slurmdbd refuses every update of a resized job until it is requeued.
TEST(ChangePath, ALockedRecordChangesOnlyThroughARequeue) {
  const std::vector<NodeState> nodes = test::nodes("3x8xbig");
  JobState j = test::job("j", Sla::best_effort, 16, 100);
  j.current.slices = {Slice{0, 8, 32, 0}, Slice{1, 8, 32, 0}};
  const std::vector<Slice> one = {Slice{0, 8, 32, 0}};
  EXPECT_EQ(change_path(j, nodes, j.current.slices), ChangePath::inplace);
  EXPECT_EQ(change_path(j, nodes, one), ChangePath::shrink);
  j.record_locked = true;
  EXPECT_EQ(change_path(j, nodes, j.current.slices), ChangePath::requeue);
  EXPECT_EQ(change_path(j, nodes, one), ChangePath::requeue);
}

// A record names counts, not nodes: a move to other nodes in the same shape (a job moved
// out of a guaranteed job's way) cannot be done in place.
TEST(ChangePath, AMoveToOtherNodesIsARequeue) {
  const std::vector<NodeState> nodes = test::nodes("3x8xbig");
  JobState j = test::job("j", Sla::best_effort, 16, 100);
  j.current.slices = {Slice{0, 8, 32, 0}, Slice{1, 8, 32, 0}};
  EXPECT_EQ(change_path(j, nodes, {Slice{1, 8, 32, 0}, Slice{0, 8, 32, 0}}), ChangePath::inplace);
  EXPECT_EQ(change_path(j, nodes, {Slice{0, 8, 32, 0}, Slice{2, 8, 32, 0}}), ChangePath::requeue);
  // Slurm shrinks a job to the first of its nodes in node order (seen on the local
  // cluster: a100-2,v100-[1-2] with NumNodes=2 kept a100-2,v100-1).
  EXPECT_EQ(change_path(j, nodes, {Slice{0, 8, 32, 0}}), ChangePath::shrink);
  EXPECT_EQ(change_path(j, nodes, {Slice{1, 8, 32, 0}}), ChangePath::requeue);
  EXPECT_EQ(change_path(j, nodes, {Slice{2, 8, 32, 0}}), ChangePath::requeue);
  j.current.slices = {Slice{2, 8, 32, 0}, Slice{0, 8, 32, 0}};  // in any order
  EXPECT_EQ(change_path(j, nodes, {Slice{0, 8, 32, 0}}), ChangePath::shrink);
}

TEST(RestartCosts, PerPathAndParsed) {
  const RestartCosts c = parse_restart_costs("start=1, inplace=4,Shrink=2", "--restart-costs", RestartCosts::uniform(15));
  EXPECT_EQ(c, (RestartCosts{1, 4, 2, 15}));
  EXPECT_DOUBLE_EQ(c.of(ChangePath::shrink), 2);
  EXPECT_DOUBLE_EQ(c.of(ChangePath::requeue), 15);
  EXPECT_THROW(parse_restart_costs("grow=3", "--restart-costs", c), Error);
  EXPECT_THROW(parse_restart_costs("start", "--restart-costs", c), Error);
  EXPECT_THROW(parse_restart_costs("start=-1", "--restart-costs", c), Error);
}

}  // namespace
}  // namespace morph::policy
