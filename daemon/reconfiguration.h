// What the policy's decisions mean for Slurm (pure): each decision that changes a job
// becomes one reconfiguration along the cheapest path that reaches it.
//
//   start     a pending job gets the record (and, through job_submit_morph, the request)
//             of its target
//   inplace   a new plan on the job's GPUs: only the record changes; morphrun --driver
//             checkpoints the step and restarts it under the new plan
//   shrink    the same GPU type and GPUs per node on fewer of its nodes: the same, and
//             the driver gives the other nodes back
//   requeue   more nodes, another GPU type or count per node: checkpoint signal, the
//             job exits 75 and is requeued, held, updated, released
//   preempt   no GPUs: checkpoint signal and requeue; the job waits with its record
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/store/journal_state.h"
#include "daemon/view_builder.h"
#include "libmorph/policy/alternatives.h"
#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"

namespace morph::daemon {

// The paths are the journal's (daemon/store/journal_state.h): one list for both.
using Path = store::ReconfigurationPath;

struct Reconfiguration {
  std::uint32_t job = 0;
  Path path = Path::start;
  std::string from_record;  // the AdminComment the decision was made on
  std::string to_record;    // the new one; for preempt, the same
  std::string reason;       // one line: the action and what it changes
  std::vector<policy::Alternative> alternatives = {};  // the chosen configuration and those that lost
  std::uint32_t user_uid = 0;  // the job's user, as Slurm lists it: for a job the journal records first
};

// The placement a target allocation is in Morph's record: the same GPUs and CPUs on each
// node, of one GPU type or of its groups' types (record/gpu_groups.h). Throws
// morph::Error when the target cannot be written so.
Placement placement_of(const policy::ClusterView& view, const policy::JobAllocation& target, double iter_ms);

// One reconfiguration per decision that changes a job, in the decisions' order, with
// its alternatives (libmorph/policy/alternatives.h). A decision that cannot be written
// as a record is left out and said in `skipped`.
std::vector<Reconfiguration> plan_reconfigurations(const BuiltView& built, const std::vector<policy::Decision>& decisions,
                                                   policy::PlanOracle& oracle, std::vector<std::string>* skipped);

}  // namespace morph::daemon
