// What a policy expects of a job's length (libmorph/policy/job_length.h) and what the
// simulator lets it know (libmorph/sim/known_length.h); the simulator's progress stays
// the true one whatever the policy knows.
#include "libmorph/policy/job_length.h"

#include <gtest/gtest.h>

#include "libmorph/sim/known_length.h"
#include "libmorph/sim/simulator.h"
#include "libmorph/util/error.h"
#include "policy_support.h"

namespace morph {
namespace {

using policy::ClusterView;
using policy::JobState;
using policy::expected_remaining_iterations;

TEST(JobLength, ADeclarationCountsUntilTheJobReachesIt) {
  ClusterView v;
  JobState j = test::job("j", Sla::best_effort, 2, 0);
  j.declared_iterations = 1000;
  j.attained_iterations = 300;
  EXPECT_DOUBLE_EQ(expected_remaining_iterations(j, v, 2.0), 700);
  // A time limit at the predicted speed of the request, when no count is declared.
  j.declared_iterations = 0;
  j.time_limit_s = 3600;
  EXPECT_DOUBLE_EQ(policy::declared_total_iterations(j, 2.0), 7200);
  EXPECT_DOUBLE_EQ(expected_remaining_iterations(j, v, 2.0), 6900);
  // Past its declaration, the job is estimated as one of unknown length.
  j.attained_iterations = 9000;
  EXPECT_DOUBLE_EQ(expected_remaining_iterations(j, v, 2.0), 9000);
}

TEST(JobLength, UnknownLengthsGrowWithAttainedServiceFromAPrior) {
  ClusterView v;
  v.unknown_length_prior_s = 600;
  JobState j = test::job("j", Sla::best_effort, 2, 0);
  j.declared_iterations = 0;
  const double rate = 4.0;  // iterations/s of its request
  EXPECT_DOUBLE_EQ(expected_remaining_iterations(j, v, rate), 600 * rate);  // not run yet: the prior
  j.attained_iterations = 100;
  EXPECT_DOUBLE_EQ(expected_remaining_iterations(j, v, rate), 600 * rate);
  j.attained_iterations = 1e5;  // Pareto(2): as much again as it has done
  EXPECT_DOUBLE_EQ(expected_remaining_iterations(j, v, rate), 1e5);
  // With the oracle: the prior at the predicted speed of the request.
  policy::PlanOracle oracle = test::make_oracle();
  v.nodes = test::nodes("1x8xbig");
  j.attained_iterations = 0;
  const double requested = oracle.requested_rate(j, v.nodes, 0);
  ASSERT_GT(requested, 0);
  EXPECT_DOUBLE_EQ(expected_remaining_iterations(j, v, oracle), 600 * requested);
}

TEST(KnownLength, TimeLimitsAreUsualSlurmLimitsAtLeastTheRunTime) {
  EXPECT_DOUBLE_EQ(sim::slurm_time_limit_s(1), 900);
  EXPECT_DOUBLE_EQ(sim::slurm_time_limit_s(900), 900);
  EXPECT_DOUBLE_EQ(sim::slurm_time_limit_s(901), 1800);
  EXPECT_DOUBLE_EQ(sim::slurm_time_limit_s(5000), 7200);
  EXPECT_DOUBLE_EQ(sim::slurm_time_limit_s(13 * 3600.0), 24 * 3600.0);
  EXPECT_DOUBLE_EQ(sim::slurm_time_limit_s(200 * 3600.0), 2 * 168 * 3600.0);
  for (double d : {0.5, 77.0, 4000.0, 1e5, 1e7}) EXPECT_GE(sim::slurm_time_limit_s(d), d);
}

TEST(KnownLength, ModesSetWhatThePolicySeesAndNamesBadValues) {
  std::vector<sim::SimJob> jobs(1);
  jobs[0].steps = 500;
  jobs[0].duration_s = 1000;
  sim::declare_lengths(jobs, sim::JobLength::exact);
  EXPECT_EQ(jobs[0].state.declared_iterations, 500);
  EXPECT_EQ(jobs[0].state.time_limit_s, 0);
  sim::declare_lengths(jobs, sim::JobLength::declared);
  EXPECT_EQ(jobs[0].state.declared_iterations, 0);
  EXPECT_EQ(jobs[0].state.time_limit_s, 1800);
  jobs[0].duration_s = 0;  // a row that does not say: no limit, not 15 minutes
  sim::declare_lengths(jobs, sim::JobLength::declared);
  EXPECT_EQ(jobs[0].state.time_limit_s, 0);
  sim::declare_lengths(jobs, sim::JobLength::unknown);
  EXPECT_EQ(jobs[0].state.declared_iterations, 0);
  EXPECT_EQ(jobs[0].state.time_limit_s, 0);
  EXPECT_EQ(sim::parse_job_length("unknown", "--job-length"), sim::JobLength::unknown);
  try {
    sim::parse_job_length("guess", "--job-length");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--job-length: 'guess' is not exact, declared or unknown");
  }
}

// Whatever the policies believe of a job's length, it runs its true steps.
TEST(KnownLength, TheSimulatorProgressesByTheTrueSteps) {
  policy::PlanOracle oracle = test::make_oracle();
  const auto nodes = test::nodes("1x8xbig");
  std::vector<double> jcts;
  for (sim::JobLength length : {sim::JobLength::exact, sim::JobLength::declared, sim::JobLength::unknown}) {
    std::vector<sim::SimJob> jobs(1);
    jobs[0].state = test::job("solo", Sla::best_effort, 4, 0);
    jobs[0].steps = 3000;
    jobs[0].duration_s = 100;  // a wrong trace duration: the limit is short, the job runs on
    sim::declare_lengths(jobs, length);
    auto fifo = policy::make_policy("fifo");
    const sim::SimResult r = sim::simulate(jobs, nodes, *fifo, oracle, sim::TraceTruth{}, {});
    ASSERT_TRUE(r.jobs[0].finished()) << sim::to_string(length);
    jcts.push_back(r.jobs[0].jct_s());
  }
  const JobState j = test::job("solo", Sla::best_effort, 4, 0);
  const double iteration_s =
      oracle.predict_s(j, j.requested_plan, nodes, {policy::Slice{0, 4, j.requested_cpus, 0}});
  for (double jct : jcts) EXPECT_NEAR(jct, 260 + 3000 * iteration_s, 1e-6);
}

}  // namespace
}  // namespace morph
