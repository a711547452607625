// What a job's iteration reports tell the policy: its measured iteration time under its
// current plan and, for a guaranteed job, its promise (the speed measured on its own
// request) and whether a plan Morph chose measured slower than that (Morphling §5; the
// rule is observe_iteration() in libmorph/policy/cluster_view.h, as in the simulator).
// Everything comes from the job's history in the state database, so a restarted morphd
// knows what its predecessor knew.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "daemon/store/records.h"
#include "libmorph/adaptive/batch_trajectory.h"
#include "libmorph/policy/cluster_view.h"

namespace morph::daemon {

// One job as the state database keeps it: the plans morphd gave it (job_plans) and the
// iterations morphrun reported (observations), each in time order.
struct JobHistory {
  std::vector<store::PlanPeriod> plans;
  // Seconds without GPUs since its submission, as JobTracker last counted them; none: not counted.
  std::optional<double> waited_s;
  std::vector<store::Observation> observations;
  // A job of --morph-adaptive-batch: its batch per iteration since its first report,
  // whatever its plan, as the steps where it changed (BatchHistory::changes()); empty for
  // the others.
  std::vector<StepBatch> step_batches;
};
using JobHistories = std::map<std::uint32_t, JobHistory>;  // by Slurm job id

struct MeasurementOptions {
  int window = 20;           // a median is over a plan's last this many iterations
  int min_observations = 3;  // fewer iterations under a plan measure nothing (a slow first
                             // iteration after a restart must not set a promise)
};

struct JobMeasurement {
  double iteration_s = 0;           // under the current plan since the job's latest (re)start; 0: not measured
  int observations = 0;             // iterations that median is over
  double promised_iteration_s = 0;  // guaranteed jobs, measured on their request; 0: not yet
  bool held_to_request = false;
};

// An iteration belongs to the plan the job held when it was reported (its request until
// the first job_plans row, then each row's record) and counts only when it was reported
// under that plan's layout (state::layout_of), which drops what an earlier plan
// reported late. The current plan's median is over what came after the job's latest
// (re)start (JobState::ready_s, the latest job_plans row). A period on more nodes of
// `nodes` than the request asks for (policy::on_requested_nodes) sets no promise:
// `nodes` are the cluster's, each with all its GPUs, however many other jobs hold this
// round.
JobMeasurement measure_job(const policy::JobState& job, const JobHistory& history,
                           const std::vector<policy::NodeState>& nodes, const MeasurementOptions& options = {});

// The measurement into the job's state, as observe_iteration() leaves it in the simulator.
void apply_measurement(policy::JobState& job, const JobMeasurement& measurement);

}  // namespace morph::daemon
