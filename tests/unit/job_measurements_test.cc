// What a job's reported iterations tell the policy (daemon/job_measurements.h): the
// current plan's median since the latest restart, and a guaranteed job's promise and hold.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/job_measurements.h"
#include "libmorph/record/job_record.h"
#include "libmorph/state/layout.h"
#include "tests/unit/test_support.h"

namespace morph::daemon {
namespace {

const ExecutionPlan kRequest = test::make_plan(4, 1, 1, 1, 1, 4);  // dp=4 on 4 GPUs
const ExecutionPlan kChosen = test::make_plan(2, 2, 1, 1, 1, 8);   // tp=2 on the same 4 GPUs
const ExecutionPlan kLarger = test::make_plan(8, 1, 1, 1, 1, 2);   // dp=8 on 8 GPUs

std::string layout(const ExecutionPlan& plan) { return state::to_string(state::layout_of(plan)); }

// A job that asked for kRequest and runs `current` (none: pending) since `ready_s`.
policy::JobState job(Sla sla, std::optional<ExecutionPlan> current, double ready_s = 0) {
  policy::JobState j;
  j.id = "7";
  j.sla = sla;
  j.requested_plan = kRequest;
  if (current) j.current = policy::JobAllocation{{policy::Slice{0, current->gpus(), 0, 0}}, *current};
  j.ready_s = ready_s;
  return j;
}

// Two nodes of eight A100s.
std::vector<policy::NodeState> nodes() {
  policy::NodeState n;
  n.type.gpus = 8;
  n.gpu.name = "a100-80g";
  return {n, n};
}

JobMeasurement measured(const policy::JobState& j, const JobHistory& h, const MeasurementOptions& o = {}) {
  return measure_job(j, h, nodes(), o);
}

// The job_plans row of a plan morphd gave the job at `from`, on `spread` nodes.
store::PlanPeriod period(std::int64_t from, const ExecutionPlan& plan, int spread = 1) {
  JobRecord r;
  r.request.model = "gpt2-1.5b";
  r.request.global_batch = 16;
  r.current.gpu_type = "a100-80g";
  r.current.nodes = spread;
  r.current.gpus_per_node = plan.gpus() / spread;
  r.current.cpus_per_gpu = 4;
  r.current.plan = plan;
  return {7, from, to_admin_comment(r), "a100-80g", 1, plan.gpus(), 0, std::nullopt};
}

// Iterations of `seconds` each, reported one a second from `from` under `plan`'s layout.
void report(JobHistory& h, std::int64_t from, const ExecutionPlan& plan, const std::vector<double>& seconds) {
  for (std::size_t i = 0; i < seconds.size(); ++i)
    h.observations.push_back(
        {7, from + static_cast<std::int64_t>(i), static_cast<std::int64_t>(i), seconds[i], 16, layout(plan)});
}

TEST(JobMeasurements, TheCurrentPlanIsMeasuredByTheMedianOfItsLastIterations) {
  JobHistory h;
  report(h, 100, kRequest, {9.0, 1.0, 1.2, 5.0, 1.1});
  const JobMeasurement m = measured(job(Sla::best_effort, kRequest, 100), h);
  EXPECT_DOUBLE_EQ(m.iteration_s, 1.2);
  EXPECT_EQ(m.observations, 5);
  // Only the last `window`: 1.2, 5.0, 1.1.
  EXPECT_DOUBLE_EQ(measured(job(Sla::best_effort, kRequest, 100), h, {3, 3}).iteration_s, 1.2);
  // Over the last two (1.1 and 5.0) with a window of 2.
  EXPECT_DOUBLE_EQ(measured(job(Sla::best_effort, kRequest, 100), h, {2, 1}).iteration_s, 3.05);
  EXPECT_DOUBLE_EQ(m.promised_iteration_s, 0);  // best effort: no promise
}

TEST(JobMeasurements, NothingOrTooLittleMeasuresNothing) {
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kRequest, 100), {}).iteration_s, 0);
  JobHistory h;
  report(h, 100, kRequest, {1.0, 1.0});  // two, fewer than min_observations
  const JobMeasurement m = measured(job(Sla::guaranteed, kRequest, 100), h);
  EXPECT_DOUBLE_EQ(m.iteration_s, 0);
  EXPECT_EQ(m.observations, 0);
  EXPECT_DOUBLE_EQ(m.promised_iteration_s, 0);
  // A pending job has no current plan to measure.
  report(h, 102, kRequest, {1.0});
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, std::nullopt), h).iteration_s, 0);
}

TEST(JobMeasurements, OnlyIterationsSinceTheLatestRestartCount) {
  JobHistory h;
  report(h, 100, kRequest, {2.0, 2.0, 2.0, 2.0});  // before a requeue on the same plan
  report(h, 500, kRequest, {1.0, 1.0, 1.0});
  EXPECT_DOUBLE_EQ(measured(job(Sla::best_effort, kRequest, 500), h).iteration_s, 1.0);
  EXPECT_DOUBLE_EQ(measured(job(Sla::best_effort, kRequest, 0), h).iteration_s, 2.0);  // median of all 7
  // A plan morphd gave the job later starts a period too, even without a Slurm restart.
  h.plans.push_back(period(600, kRequest));
  report(h, 600, kRequest, {3.0, 3.0, 3.0});
  EXPECT_DOUBLE_EQ(measured(job(Sla::best_effort, kRequest, 100), h).iteration_s, 3.0);
}

TEST(JobMeasurements, IterationsUnderAnotherLayoutAreIgnored) {
  JobHistory h;
  h.plans.push_back(period(100, kChosen));
  report(h, 100, kRequest, {5.0, 5.0, 5.0, 5.0});  // the previous plan's last reports, late
  report(h, 110, kChosen, {1.0, 1.0, 1.0});
  const JobMeasurement m = measured(job(Sla::best_effort, kChosen, 100), h);
  EXPECT_DOUBLE_EQ(m.iteration_s, 1.0);
  EXPECT_EQ(m.observations, 3);
}

TEST(JobMeasurements, AnUnreadablePlanRecordCountsNothing) {
  JobHistory h;
  h.plans.push_back(period(100, kRequest));
  report(h, 100, kRequest, {1.0, 1.0, 1.0});
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kRequest, 100), h).promised_iteration_s, 1.0);
  h.plans.back().record = "morph:v1 broken";
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kRequest, 100), h).promised_iteration_s, 0);
}

TEST(JobMeasurements, AGuaranteedJobsPromiseIsMeasuredOnItsRequestOnly) {
  JobHistory h;
  report(h, 100, kRequest, {1.0, 1.1, 1.0});
  h.plans.push_back(period(200, kChosen));
  report(h, 210, kChosen, {0.7, 0.7, 0.7});
  const JobMeasurement m = measured(job(Sla::guaranteed, kChosen, 200), h);
  EXPECT_DOUBLE_EQ(m.promised_iteration_s, 1.0);
  EXPECT_DOUBLE_EQ(m.iteration_s, 0.7);
  EXPECT_FALSE(m.held_to_request);  // faster than its promise
  // Measured only on plans Morph chose: no promise yet.
  JobHistory chosen;
  chosen.plans.push_back(period(200, kChosen));
  report(chosen, 210, kChosen, {0.7, 0.7, 0.7});
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kChosen, 200), chosen).promised_iteration_s, 0);
  // Nor is a larger plan.
  JobHistory larger;
  larger.plans.push_back(period(200, kLarger));
  report(larger, 210, kLarger, {0.5, 0.5, 0.5});
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kLarger, 200), larger).promised_iteration_s, 0);
}

TEST(JobMeasurements, ARequestSpreadOverMoreNodesThanItNeedsSetsNoPromise) {
  JobHistory h;
  h.plans.push_back(period(100, kRequest, 2));  // 2 x 2 GPUs where one node holds 4
  report(h, 110, kRequest, {3.0, 3.0, 3.0});
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kRequest, 100), h).promised_iteration_s, 0);
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kRequest, 100), h).iteration_s, 3.0);
  h.plans.push_back(period(200, kRequest));  // moved onto one node
  report(h, 210, kRequest, {1.0, 1.0, 1.0});
  EXPECT_DOUBLE_EQ(measured(job(Sla::guaranteed, kRequest, 200), h).promised_iteration_s, 1.0);
  // A user who asked for two nodes is promised what the request does there.
  policy::JobState two = job(Sla::guaranteed, kRequest, 100);
  two.requested_nodes = 2;
  JobHistory spread;
  spread.plans.push_back(period(100, kRequest, 2));
  report(spread, 110, kRequest, {3.0, 3.0, 3.0});
  EXPECT_DOUBLE_EQ(measured(two, spread).promised_iteration_s, 3.0);
}

TEST(JobMeasurements, SlowerThanItsPromiseHoldsAGuaranteedJobToItsRequestForGood) {
  JobHistory h;
  report(h, 100, kRequest, {1.0, 1.0, 1.0});
  h.plans.push_back(period(200, kChosen));
  report(h, 210, kChosen, {1.0 * (1 + policy::kPromiseTolerance / 2), 1.0 * (1 + policy::kPromiseTolerance / 2), 1.0});
  EXPECT_FALSE(measured(job(Sla::guaranteed, kChosen, 200), h).held_to_request);  // within the tolerance
  h.plans.push_back(period(300, kLarger));
  report(h, 310, kLarger, {1.2, 1.2, 1.2});
  const JobMeasurement slow = measured(job(Sla::guaranteed, kLarger, 300), h);
  EXPECT_TRUE(slow.held_to_request);
  EXPECT_DOUBLE_EQ(slow.promised_iteration_s, 1.0);
  // Back on its request, it stays held: the history says so after any restart of morphd.
  h.plans.push_back(period(400, kRequest));
  report(h, 410, kRequest, {0.9, 0.9, 0.9});
  const JobMeasurement back = measured(job(Sla::guaranteed, kRequest, 400), h);
  EXPECT_TRUE(back.held_to_request);
  EXPECT_DOUBLE_EQ(back.promised_iteration_s, 1.0);  // the first measurement stands
  EXPECT_DOUBLE_EQ(back.iteration_s, 0.9);
  // Best-effort jobs are never held.
  EXPECT_FALSE(measured(job(Sla::best_effort, kLarger, 300), h).held_to_request);
}

TEST(JobMeasurements, AppliedAsTheSimulatorsObserveIterationLeavesThem) {
  policy::JobState j = job(Sla::guaranteed, kChosen, 200);
  apply_measurement(j, {0.8, 5, 1.0, true});
  EXPECT_DOUBLE_EQ(j.measured_iteration_s, 0.8);
  EXPECT_DOUBLE_EQ(j.promised_iteration_s, 1.0);
  EXPECT_TRUE(j.held_to_request);
}

}  // namespace
}  // namespace morph::daemon
