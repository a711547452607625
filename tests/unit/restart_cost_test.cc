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

// Host memory of the fixture application "m" (8 layers of 1024, vocabulary 1000): W =
// 1000*1024 + 8*(12*1024^2 + 13*1024) = 101,793,792 parameters. With 1 GiB of overhead
// per GPU a plan needs 1 GiB per GPU, and ZeRO-Offload 18 W / dp more (its fp32 states
// and 16-bit buffer on the host).
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kW = 101793792;

PlanOracle host_oracle() {
  const AppProfile app{test::app_workload(), PerfModel{ForwardModel{0, 10, 1}, PerfParams{}}};
  return PlanOracle({{"m", app}}, MemoryOptions{0, kGiB});
}

ExecutionPlan zero2(int dp, bool offload = false) {
  ExecutionPlan p = test::make_plan(dp, 1, 1, 1, 1, 64 / dp);
  p.zero_stage = 2;
  p.offload = offload;
  return p;
}

// A running job's record cannot raise its memory: a new plan in place that needs more host
// memory per node is a requeue; one that needs as much or less stays in place.
TEST(ChangePath, APlanInPlaceThatNeedsMoreHostMemoryPerNodeIsARequeue) {
  const PlanOracle oracle = host_oracle();
  const std::vector<NodeState> nodes = test::nodes("3x8xbig");
  JobState j = test::job("j", Sla::best_effort, 8, 100);
  j.current = {{Slice{0, 8, 64, 0}}, zero2(8)};
  ASSERT_DOUBLE_EQ(oracle.host_bytes_per_gpu(j, zero2(8)), kGiB);
  ASSERT_DOUBLE_EQ(oracle.host_bytes_per_gpu(j, zero2(8, true)), kGiB + 18 * kW / 8);
  const std::vector<Slice>& same = j.current.slices;
  // 8 GiB + 18 W per node against 8 GiB.
  EXPECT_EQ(change_path(j, nodes, same, zero2(8, true), oracle), ChangePath::requeue);
  EXPECT_EQ(change_path(j, nodes, same, test::make_plan(4, 2, 1, 1, 1, 4), oracle), ChangePath::inplace);  // 8 GiB
  j.current.plan = zero2(8, true);
  EXPECT_EQ(change_path(j, nodes, same, zero2(8), oracle), ChangePath::inplace);  // less
  EXPECT_EQ(change_path(j, nodes, same, zero2(8, true), oracle), ChangePath::inplace);
  // The rule is the same where the policy knows no nodes yet.
  EXPECT_EQ(within_host_memory(ChangePath::inplace, j, zero2(8), oracle), ChangePath::inplace);
  j.current.plan = zero2(8);
  EXPECT_EQ(within_host_memory(ChangePath::inplace, j, zero2(8, true), oracle), ChangePath::requeue);
  EXPECT_EQ(within_host_memory(ChangePath::start, j, zero2(8, true), oracle), ChangePath::start);
}

// The user's --mem is what the job holds at least: a plan within it stays in place.
TEST(ChangePath, TheUsersMemIsAFloorOfTheHostMemoryCompared) {
  const PlanOracle oracle = host_oracle();
  const std::vector<NodeState> nodes = test::nodes("3x8xbig");
  JobState j = test::job("j", Sla::best_effort, 8, 100);
  j.current = {{Slice{0, 8, 64, 0}}, zero2(8)};
  j.min_host_bytes_per_node = 8 * kGiB + 18 * kW;  // exactly what the offloading plan needs
  EXPECT_EQ(change_path(j, nodes, j.current.slices, zero2(8, true), oracle), ChangePath::inplace);
  j.min_host_bytes_per_node = 8 * kGiB + 18 * kW - 1;
  EXPECT_EQ(change_path(j, nodes, j.current.slices, zero2(8, true), oracle), ChangePath::requeue);
}

// ZeRO-Offload on fewer GPUs: each holds more of the offloaded states, so a shrink that
// keeps offloading needs more host memory on the node it keeps.
TEST(ChangePath, AShrinkThatNeedsMoreHostMemoryPerNodeIsARequeue) {
  const PlanOracle oracle = host_oracle();
  const std::vector<NodeState> nodes = test::nodes("3x8xbig");
  JobState j = test::job("j", Sla::best_effort, 16, 100);
  j.current = {{Slice{0, 8, 64, 0}, Slice{1, 8, 64, 0}}, zero2(16, true)};  // 8 GiB + 9 W per node
  const std::vector<Slice> first = {Slice{0, 8, 64, 0}};
  ASSERT_EQ(change_path(j, nodes, first), ChangePath::shrink);
  EXPECT_EQ(change_path(j, nodes, first, zero2(8, true), oracle), ChangePath::requeue);  // 8 GiB + 18 W
  EXPECT_EQ(change_path(j, nodes, first, zero2(8), oracle), ChangePath::shrink);         // 8 GiB
  j.min_host_bytes_per_node = 8 * kGiB + 18 * kW;
  EXPECT_EQ(change_path(j, nodes, first, zero2(8, true), oracle), ChangePath::shrink);
  // A requeue by the nodes stays one.
  EXPECT_EQ(change_path(j, nodes, {Slice{2, 8, 64, 0}}, zero2(8), oracle), ChangePath::requeue);
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
