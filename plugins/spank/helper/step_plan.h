// What the tasks of a job step get as their plan, without Slurm's types so that it can be
// unit-tested. The batch step (and the interactive step of salloc) reads the job's record
// from slurmctld, with bounded retries; every other step inherits it from the batch
// script's environment (MORPH_RECORD), so a job start costs one RPC, not one per node
// and step. A record that cannot be read, or that does not match the allocation, never
// fails the launch (a failing remote hook drains the node): it becomes a failure that
// the task reports and exits with, 75 when a retry may succeed (Slurm's RequeueExit
// requeues the job), 78 when it cannot.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "libmorph/record/job_record.h"

namespace morph::plugin {

inline constexpr int kExitRetry = 75;   // EX_TEMPFAIL: slurmctld did not answer; requeue
inline constexpr int kExitRefuse = 78;  // EX_CONFIG: no record, a bad one, or one that does not fit

// What slurmctld says of the job (slurm_load_job).
struct JobView {
  std::string admin_comment;
  int nodes = 0;
  std::string tres_per_node;  // the job's GPU request, "gres:gpu:<type>:<n>"
};

// One attempt to read the job from slurmctld: the job, or nullopt with `error` set.
using JobLoader = std::function<std::optional<JobView>(std::string* error)>;
using Sleeper = std::function<void(std::chrono::milliseconds)>;

struct RetryPolicy {
  int tries = 4;                                   // plan_tries= in plugstack.conf
  std::chrono::milliseconds first_backoff{1000};   // doubled after each failure
  std::chrono::milliseconds max_backoff{8000};
  // Asked before each pause: true gives up at once (srun, which blocks SIGINT while its
  // plugins initialise, has a Ctrl-C pending). Empty: never.
  std::function<bool()> interrupted = {};
};

struct StepContext {
  std::uint32_t job_id = 0;
  bool reads_controller = false;  // the batch or interactive step
  // The step's environment, as far as it matters: MORPH_RECORD, MORPH_RECORD_JOB,
  // SLURM_JOB_NUM_NODES, SLURM_GPUS_ON_NODE.
  std::map<std::string, std::string> env;
};

enum class PlanFailure { none, retry, refuse };

struct StepPlan {
  PlanFailure failure = PlanFailure::none;
  std::string message;  // "morph: job N: ..." when failed (what follows is the caller's to say)
  std::vector<std::pair<std::string, std::string>> env;  // what the tasks get
  std::vector<std::string> unset;  // plan variables the tasks must not see (another plan's)
  std::optional<JobRecord> record;
  int exit_code() const { return failure == PlanFailure::retry ? kExitRetry : failure == PlanFailure::refuse ? kExitRefuse : 0; }
};

// Reads the record (from the environment or from slurmctld, retrying as `retry` says) and
// checks it against the allocation. srun inside an allocation calls it as a step that
// reads the controller, with an empty environment.
StepPlan step_plan(const StepContext& step, const JobLoader& load, const RetryPolicy& retry, const Sleeper& sleep);

// srun's defaults inside a Morph allocation: one task per GPU with the plan's CPUs, unless
// the user set them (SLURM_NTASKS, SLURM_NTASKS_PER_NODE, SLURM_CPUS_PER_TASK).
std::vector<std::pair<std::string, std::string>> srun_defaults(const JobRecord& record);

}  // namespace morph::plugin
