// Issue 11: no policy may starve a job. A job that has waited past the starvation limit
// (ClusterView::starvation_limit_s) is overdue and must run, under every policy.
#include <gtest/gtest.h>

#include "libmorph/sim/simulator.h"
#include "policy_support.h"

namespace morph {
namespace {

using policy::JobState;

sim::SimJob sim_job(JobState j) {
  sim::SimJob s;
  s.steps = j.declared_iterations;
  s.state = std::move(j);
  return s;
}

// A job of the whole node submitted behind a short job, then a stream of short half-node
// jobs, each arriving before the last one ends: policies that favour short jobs (SRPT-
// like Morphling on a fixed GPU count) or run best-effort jobs without reservations
// (AntMan) keep the long job waiting while the stream lasts.
std::vector<sim::SimJob> stream_with_a_long_job() {
  std::vector<sim::SimJob> jobs;
  jobs.push_back(sim_job(test::job("short-0", Sla::best_effort, 4, 1500, 0)));
  jobs.push_back(sim_job(test::job("long", Sla::best_effort, 8, 20000, 5)));
  for (int i = 1; i <= 120; ++i)
    jobs.push_back(sim_job(test::job("short-" + std::to_string(i), Sla::best_effort, 4, 1500, 100.0 * i)));
  return jobs;
}

double long_job_wait_s(const std::string& policy_name, double limit_s) {
  policy::PlanOracle oracle = test::make_oracle();
  auto p = policy::make_policy(policy_name);
  sim::SimOptions o;
  o.starvation_limit_s = limit_s;
  const sim::SimResult r = sim::simulate(stream_with_a_long_job(), test::nodes("1x8xbig"), *p, oracle, sim::TraceTruth{}, o);
  for (const sim::JobResult& j : r.jobs) {
    EXPECT_TRUE(j.finished()) << policy_name << ": " << j.name;
    if (j.name == "long") return j.queue_s();
  }
  ADD_FAILURE() << "no job named long";
  return 0;
}

TEST(Starvation, TheScenarioStarvesWithoutTheRule) {
  // The stream lasts 12,000 s; without the rule the long job waits for most of it.
  EXPECT_GT(long_job_wait_s("morphling-e", 0), 6000);
  EXPECT_GT(long_job_wait_s("antman", 0), 6000);
}

TEST(Starvation, AnOverdueJobRunsUnderEveryPolicy) {
  constexpr double kLimitS = 1800;
  for (const std::string& name : policy::policy_names()) {
    // It starts by the first round after it became overdue (rounds every 60 s).
    EXPECT_LE(long_job_wait_s(name, kLimitS), kLimitS + 60) << name;
  }
}

TEST(Starvation, AnOverdueJobPreemptsBestEffortJobsAndIsNotPreempted) {
  policy::PlanOracle oracle = test::make_oracle();
  policy::ClusterView v;
  v.nodes = test::nodes("1x8xbig");
  v.starvation_limit_s = 3600;
  v.now_s = 5000;
  v.jobs = {test::running(test::job("short", Sla::best_effort, 4, 10, 4000), 0, 4100),
            test::job("long", Sla::best_effort, 8, 1e7, 0)};
  for (const std::string name : {"morphling-e", "antman"}) {
    v.jobs[1].waited_s = 1000;
    EXPECT_TRUE(test::target_of(test::round(name, v, oracle), "long").empty()) << name;
    v.jobs[1].waited_s = 3600;  // overdue
    const auto d = test::round(name, v, oracle);
    EXPECT_EQ(test::target_of(d, "long").gpus(), 8) << name;
    EXPECT_TRUE(test::target_of(d, "short").empty()) << name;
  }
}

}  // namespace
}  // namespace morph
