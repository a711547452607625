// Why a job has its allocation (libmorph/policy/alternatives.h): the chosen configuration
// first, each other one with the reason it lost, in a bounded, deterministic order.
#include <gtest/gtest.h>

#include <algorithm>

#include "libmorph/policy/alternatives.h"
#include "libmorph/util/error.h"
#include "policy_support.h"

namespace morph::policy {
namespace {

using test::job;
using test::running;

// `j` on `gpus` GPUs of node `node` with its requested plan scaled to them.
JobAllocation on(int node, int gpus) { return {{Slice{node, gpus, 8 * gpus, 0}}, test::make_plan(gpus, 1, 1, 1, 1, 64 / gpus)}; }

const Alternative* find(const std::vector<Alternative>& all, const std::string& type, int gpus) {
  for (const Alternative& a : all)
    if (a.gpu_type == type && a.gpus == gpus) return &a;
  return nullptr;
}

TEST(Alternatives, TheChosenComesFirstAndIsNeverListedAsLost) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v;
  v.nodes = test::nodes("1x8xbig");
  v.jobs = {job("a", Sla::best_effort, 4, 1e6)};
  const std::vector<Decision> decisions = {{"a", on(0, 4)}};
  const auto all = alternatives(v, 0, decisions[0].target, free_gpus(v, decisions), oracle);
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0].loss, Loss::none);
  EXPECT_EQ(all[0].gpu_type, "big");
  EXPECT_EQ(all[0].gpus, 4);
  EXPECT_EQ(all[0].plan, to_string(v.jobs[0].requested_plan));
  EXPECT_GT(all[0].samples_per_s, 0);
  EXPECT_TRUE(all[0].why.empty());
  for (std::size_t i = 1; i < all.size(); ++i) {
    EXPECT_NE(all[i].loss, Loss::none);
    EXPECT_FALSE(all[i].why.empty());
    EXPECT_FALSE(all[i].gpus == 4 && all[i].plan == all[0].plan) << all[i].why;
  }
  // Fewer GPUs run slower than the chosen 4; more would fit on the free 4 and run faster.
  ASSERT_NE(find(all, "big", 2), nullptr);
  EXPECT_EQ(find(all, "big", 2)->loss, Loss::slower);
  ASSERT_NE(find(all, "big", 8), nullptr);
  EXPECT_EQ(find(all, "big", 8)->loss, Loss::outvalued);
}

TEST(Alternatives, AConfigurationNeedingMoreGpusThanFreeSaysSo) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v;
  v.nodes = test::nodes("1x8xbig");
  v.jobs = {running(job("a", Sla::best_effort, 6, 1e6), 0), job("b", Sla::best_effort, 4, 1e6)};
  const std::vector<Decision> decisions = {{"a", v.jobs[0].current}, {"b", {}}};
  const auto all = alternatives(v, 1, {}, free_gpus(v, decisions), oracle);
  ASSERT_FALSE(all.empty());
  const Alternative* eight = find(all, "big", 8);
  ASSERT_NE(eight, nullptr);
  EXPECT_EQ(eight->loss, Loss::no_room);
  EXPECT_EQ(eight->why, "needs 8 GPUs, 2 free");
  const Alternative* two = find(all, "big", 2);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->loss, Loss::outvalued);  // it fits the 2 free GPUs
  EXPECT_EQ(wait_reason(all), "wait: its best configuration, 8 x big, needs more GPUs than are free");
}

TEST(Alternatives, AreBoundedOrderedFastestFirstAndCoverEveryGpuType) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v;
  v.nodes = test::nodes("2x8xbig+1x4xsmall");
  v.jobs = {job("a", Sla::best_effort, 2, 1e6)};
  const std::vector<Decision> decisions = {{"a", on(0, 2)}};
  const auto all = alternatives(v, 0, decisions[0].target, free_gpus(v, decisions), oracle);
  ASSERT_EQ(all.size(), 1u + kMaxAlternatives);  // 7 candidates: 1, 4, 8, 16 big; 1, 2, 4 small
  for (std::size_t i = 2; i < all.size(); ++i) EXPECT_GE(all[i - 1].samples_per_s, all[i].samples_per_s);
  EXPECT_TRUE(std::any_of(all.begin() + 1, all.end(), [](const Alternative& a) { return a.gpu_type == "small"; }));
  EXPECT_EQ(all, alternatives(v, 0, decisions[0].target, free_gpus(v, decisions), oracle));  // deterministic
}

TEST(Alternatives, SayWhyAConfigurationCannotRun) {
  AppProfile app{test::app_workload(), PerfModel{ForwardModel{0, 10, 1}, PerfParams{}}};
  app.gpu_types = {"big"};
  PlanOracle oracle({{"m", app}});
  ClusterView v;
  v.nodes = test::nodes("1x8xbig+1x4xsmall");
  v.jobs = {job("a", Sla::best_effort, 4, 1e6)};
  const std::vector<Decision> decisions = {{"a", on(0, 4)}};
  const auto all = alternatives(v, 0, decisions[0].target, free_gpus(v, decisions), oracle);
  const Alternative* small = find(all, "small", 4);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->loss, Loss::infeasible);
  EXPECT_EQ(small->why, "small is not among the job's GPU types");
  EXPECT_TRUE(small->plan.empty());
  EXPECT_EQ(small->samples_per_s, 0);
}

TEST(Alternatives, AGuaranteedJobRunsItsRequestUntilMeasured) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v;
  v.nodes = test::nodes("1x8xbig");
  v.jobs = {job("g", Sla::guaranteed, 4, 1e6)};
  const std::vector<Decision> decisions = {{"g", on(0, 4)}};
  auto all = alternatives(v, 0, decisions[0].target, free_gpus(v, decisions), oracle);
  ASSERT_NE(find(all, "big", 8), nullptr);
  EXPECT_EQ(find(all, "big", 8)->loss, Loss::unmeasured);
  ASSERT_NE(find(all, "big", 2), nullptr);
  EXPECT_EQ(find(all, "big", 2)->loss, Loss::below_promise);
  v.jobs[0].held_to_request = true;
  v.jobs[0].promised_iteration_s = 1;
  all = alternatives(v, 0, decisions[0].target, free_gpus(v, decisions), oracle);
  EXPECT_EQ(find(all, "big", 8)->loss, Loss::held_to_request);
}

TEST(Alternatives, AKeptJobSaysWhenAMoveGainsLessThanMinReconfigureGain) {
  PlanOracle oracle = test::make_oracle();
  ClusterView v;
  v.nodes = test::nodes("2x8xbig");
  v.min_reconfigure_gain = 1.5;
  v.jobs = {running(job("a", Sla::best_effort, 4, 1e6), 0)};
  const std::vector<Decision> decisions = {{"a", v.jobs[0].current}};
  const auto all = alternatives(v, 0, decisions[0].target, free_gpus(v, decisions), oracle);
  ASSERT_NE(find(all, "big", 8), nullptr);
  EXPECT_EQ(find(all, "big", 8)->loss, Loss::small_gain);  // about twice as fast
  EXPECT_NE(find(all, "big", 8)->why.find("under MinReconfigureGain 150%"), std::string::npos);
  ASSERT_NE(find(all, "big", 16), nullptr);
  EXPECT_EQ(find(all, "big", 16)->loss, Loss::outvalued);  // about four times
  ASSERT_NE(find(all, "big", 2), nullptr);
  EXPECT_EQ(find(all, "big", 2)->loss, Loss::slower);
}

TEST(Alternatives, RoundTripThroughTheirJson) {
  const std::vector<Alternative> all = {{"big", 4, "dp=4 tp=1 pp=1 zero=0 ga=1 mbs=16", 0.5, 128, Loss::none, ""},
                                        {"small", 8, "", 0, 0, Loss::infeasible, "no plan fits"}};
  EXPECT_EQ(alternatives_from_json(alternatives_to_json(all), "test"), all);
  EXPECT_TRUE(alternatives_from_json("[]", "test").empty());
  EXPECT_THROW(alternatives_from_json(R"([{"gpu_type":"big"}])", "test"), Error);
  EXPECT_THROW(alternatives_from_json(R"({})", "test"), Error);
  EXPECT_THROW(parse_loss("lost", "test"), Error);
}

}  // namespace
}  // namespace morph::policy
