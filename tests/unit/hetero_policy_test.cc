// Morphling's Algorithm 1 with heterogeneous data-parallel jobs (JABAS, seed 004;
// ClusterView::heterogeneous_jobs): idle GPUs of another type join a best-effort job and
// leave it when a job of their own type needs them.
#include <gtest/gtest.h>

#include "libmorph/planner/hetero_plan.h"
#include "libmorph/policy/policy.h"
#include "libmorph/policy/restart_cost.h"
#include "policy_support.h"

namespace morph::policy {
namespace {

using test::job;
using test::round;
using test::running;
using test::target_of;

// One node of 4 big GPUs and one of 4 small (half as fast) ones; a long best-effort job
// holds the big node.
ClusterView two_types() {
  ClusterView v;
  v.nodes = test::nodes("1x4xbig+1x4xsmall");
  v.now_s = 600;
  v.heterogeneous_jobs = true;
  v.jobs = {running(job("be", Sla::best_effort, 4, 1e6), 0)};
  return v;
}

int gpus_of(const ClusterView& v, const JobAllocation& a, const std::string& type) {
  int n = 0;
  for (const Slice& s : a.slices)
    if (v.nodes[static_cast<std::size_t>(s.node)].type.gpu == type) n += s.gpus;
  return n;
}

TEST(HeteroPolicy, IdleGpusOfAnotherTypeJoinABestEffortJob) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v = two_types();
  v.heterogeneous_jobs = false;
  EXPECT_EQ(target_of(round("morphling", v, oracle), "be"), v.jobs[0].current) << "one type per job by default";

  v.heterogeneous_jobs = true;
  const JobAllocation t = target_of(round("morphling", v, oracle), "be");
  ASSERT_EQ(t.groups.size(), 2u);
  EXPECT_EQ(gpus_of(v, t, "big"), 4);
  EXPECT_EQ(gpus_of(v, t, "small"), 4);
  EXPECT_EQ(t.plan.dp, 8);
  // JABAS's balance: every worker's local batch is the same, a big GPU accumulates more
  // of it, and the groups process the global batch.
  const GpuGroup* big = find_group(t.groups, "big");
  const GpuGroup* small = find_group(t.groups, "small");
  ASSERT_TRUE(big && small);
  EXPECT_GT(big->ga_steps, small->ga_steps);
  EXPECT_EQ(4 * big->samples_per_gpu(t.plan.micro_batch_size) + 4 * small->samples_per_gpu(t.plan.micro_batch_size),
            64);
  // The model's time for it, with its groups, beats the big node alone by the margin.
  const double spanning = oracle.predict_s(v.jobs[0], t.plan, v.nodes, t.slices, t.groups);
  const double alone = oracle.predict_s(v.jobs[0], v.jobs[0].current.plan, v.nodes, v.jobs[0].current.slices);
  ASSERT_GT(spanning, 0);
  EXPECT_LT(spanning, alone / (1 + v.min_reconfigure_gain));
  EXPECT_EQ(change_path(v.jobs[0], v.nodes, t.slices), ChangePath::requeue);
}

// A waiting job starts on both types at once when the cluster is idle.
TEST(HeteroPolicy, AWaitingJobStartsOnBothTypes) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v = two_types();
  v.jobs = {job("new", Sla::best_effort, 4, 1e6, 590)};
  const JobAllocation t = target_of(round("morphling", v, oracle), "new");
  EXPECT_EQ(t.groups.size(), 2u);
  EXPECT_EQ(t.gpus(), 8);
  EXPECT_EQ(action_of(v.jobs[0], t), Action::start);
}

TEST(HeteroPolicy, AJobSpanningTwoTypesKeepsThemWhileNobodyElseNeedsThem) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v = two_types();
  v.jobs[0].current = target_of(round("morphling", v, oracle), "be");
  ASSERT_FALSE(v.jobs[0].current.groups.empty());
  v.jobs[0].ready_s = 600;
  v.now_s = 900;
  const auto d = round("morphling", v, oracle);
  EXPECT_EQ(target_of(d, "be"), v.jobs[0].current);
  EXPECT_EQ(action_of(v.jobs[0], target_of(d, "be")), Action::keep);
  EXPECT_FALSE(make_policy("morphling")->steady(v, oracle)) << "a spanning job's second type is decided each round";
}

TEST(HeteroPolicy, AGuaranteedJobTakesBackTheOtherTypesGpus) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v = two_types();
  v.jobs[0].current = target_of(round("morphling", v, oracle), "be");
  v.jobs[0].ready_s = 600;
  v.now_s = 900;
  v.jobs.push_back(job("g", Sla::guaranteed, 4, 1e6, 890));
  const auto d = round("morphling", v, oracle);
  const JobAllocation& be = target_of(d, "be");
  EXPECT_TRUE(be.groups.empty()) << "it goes back to one type";
  EXPECT_EQ(be.gpus(), 4);
  EXPECT_EQ(gpus_of(v, be, "big"), 4);
  EXPECT_EQ(target_of(d, "g").gpus(), 4);
  EXPECT_EQ(gpus_of(v, target_of(d, "g"), "small"), 4);
}

TEST(HeteroPolicy, GuaranteedAndSettlingJobsKeepOneType) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v = two_types();
  v.jobs[0].sla = Sla::guaranteed;
  v.jobs[0].promised_iteration_s = 1;  // measured: it may move, but not across types
  EXPECT_TRUE(target_of(round("morphling", v, oracle), "be").groups.empty());
  v = two_types();
  v.payback_s = 100;
  v.jobs[0].last_restart_s = 550;
  EXPECT_EQ(target_of(round("morphling", v, oracle), "be"), v.jobs[0].current);
}

// The bounds of the job's user hold across types: --morph-gpus=1-4 keeps it on one node.
TEST(HeteroPolicy, TheUsersGpuBoundCountsBothTypes) {
  AppProfile bounded{test::app_workload(), PerfModel{ForwardModel{0, 10, 1}, PerfParams{}}};
  bounded.max_gpus = 4;
  PlanOracle oracle({{"m", bounded}});
  ClusterView v = two_types();
  EXPECT_TRUE(target_of(round("morphling", v, oracle), "be").groups.empty());
}

// A job that adapts its batch keeps one type: the per-rank shares hold for one batch.
TEST(HeteroPolicy, AJobThatAdaptsItsBatchKeepsOneType) {
  AppProfile adaptive{test::app_workload(), PerfModel{ForwardModel{0, 10, 1}, PerfParams{}}};
  adaptive.adaptive_batch = true;
  PlanOracle oracle({{"m", adaptive}});
  EXPECT_TRUE(target_of(round("morphling", two_types(), oracle), "be").groups.empty());
}

}  // namespace
}  // namespace morph::policy
