#include "plugins/spank/helper/step_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/record/plan_env.h"
#include "libmorph/request/gpu_tres.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::plugin {
namespace {

StepPlan failed(PlanFailure failure, std::uint32_t job_id, const std::string& why) {
  StepPlan p;
  p.failure = failure;
  p.message = fmt::format("morph: job {}: {}", job_id, why);
  return p;
}

std::string env_value(const StepContext& step, const std::string& name) {
  const auto it = step.env.find(name);
  return it == step.env.end() ? std::string{} : it->second;
}

// `load` until it answers, at most `retry.tries` times with doubling pauses between.
std::optional<JobView> load_with_retries(const JobLoader& load, const RetryPolicy& retry, const Sleeper& sleep,
                                         std::string* last_error, std::chrono::milliseconds* waited) {
  const int tries = std::max(1, retry.tries);
  std::chrono::milliseconds pause = retry.first_backoff;
  for (int attempt = 1; attempt <= tries; ++attempt) {
    if (std::optional<JobView> job = load(last_error)) return job;
    if (attempt == tries) break;
    if (retry.interrupted && retry.interrupted()) {
      *last_error += "; interrupted";
      break;
    }
    sleep(pause);
    *waited += pause;
    pause = std::min(pause * 2, retry.max_backoff);
  }
  return std::nullopt;
}

// The record of `text`, or a refusal saying why.
StepPlan parse_record(std::uint32_t job_id, const std::string& text, const std::string& source) {
  if (!is_job_record(text))
    return failed(PlanFailure::refuse, job_id,
                  fmt::format("{} holds no Morph plan (is JobSubmitPlugins=morph set in slurm.conf?)", source));
  StepPlan p;
  try {
    p.record = parse_admin_comment(text);
  } catch (const Error& e) {
    return failed(PlanFailure::refuse, job_id, fmt::format("{} is not a valid plan: {}", source, e.what()));
  }
  return p;
}

StepPlan from_controller(std::uint32_t job_id, const JobLoader& load, const RetryPolicy& retry, const Sleeper& sleep,
                         std::optional<JobView>* job) {
  std::string error = "no answer";
  std::chrono::milliseconds waited{0};
  *job = load_with_retries(load, retry, sleep, &error, &waited);
  if (!*job)
    return failed(PlanFailure::retry, job_id,
                  fmt::format("slurmctld did not give the job's plan ({} tr{} with {:.0f} s of pauses: {})",
                              std::max(1, retry.tries), retry.tries > 1 ? "ies" : "y",
                              static_cast<double>(waited.count()) / 1e3, error));
  return parse_record(job_id, (*job)->admin_comment, "its AdminComment");
}

// Why the allocation does not match the record, or empty.
std::string allocation_mismatch(const JobRecord& r, const std::optional<JobView>& job, const StepContext& step) {
  const Placement& p = r.current;
  const std::string planned = describe(p);
  if (job) {
    if (job->nodes > 0 && job->nodes != p.nodes)
      return fmt::format("the job holds {} nodes but its plan is for {}", job->nodes, planned);
    std::optional<GpuTres> gpus;
    try {
      gpus = parse_gpu_tres(job->tres_per_node, "TresPerNode");
    } catch (const Error& e) {
      return e.what();
    }
    if (!gpus || gpus->count != p.gpus_per_node || (!gpus->type.empty() && to_lower(gpus->type) != to_lower(p.gpu_type)))
      return fmt::format("the job asks for {} per node but its plan is for {}",
                         job->tres_per_node.empty() ? "no GPUs" : quote(job->tres_per_node), planned);
  }
  if (const std::string nodes = env_value(step, "SLURM_JOB_NUM_NODES"); !nodes.empty() && nodes != std::to_string(p.nodes))
    return fmt::format("the job runs on {} nodes but its plan is for {}", nodes, planned);
  if (const std::string gpus = env_value(step, "SLURM_GPUS_ON_NODE");
      step.reads_controller && !gpus.empty() && gpus != std::to_string(p.gpus_per_node))
    return fmt::format("the job has {} GPUs on this node but its plan is for {}", gpus, planned);
  return {};
}

}  // namespace

StepPlan step_plan(const StepContext& step, const JobLoader& load, const RetryPolicy& retry, const Sleeper& sleep) {
  const std::string inherited = env_value(step, "MORPH_RECORD");
  const bool inherit = !step.reads_controller && !inherited.empty() &&
                       env_value(step, "MORPH_RECORD_JOB") == std::to_string(step.job_id);
  std::optional<JobView> job;
  StepPlan p = inherit ? parse_record(step.job_id, inherited, "MORPH_RECORD")
                       : from_controller(step.job_id, load, retry, sleep, &job);
  if (p.failure != PlanFailure::none) return p;
  if (const std::string why = allocation_mismatch(*p.record, job, step); !why.empty())
    return failed(PlanFailure::refuse, step.job_id,
                  why + " (its resources were changed without its plan)");
  p.env = plan_environment(*p.record);
  p.unset = plan_variables_not_set(*p.record);
  p.env.emplace_back("MORPH_RECORD", to_admin_comment(*p.record));
  p.env.emplace_back("MORPH_RECORD_JOB", std::to_string(step.job_id));
  return p;
}

std::vector<std::pair<std::string, std::string>> srun_defaults(const JobRecord& r) {
  return {{"SLURM_NTASKS", std::to_string(r.current.gpus())},
          {"SLURM_NTASKS_PER_NODE", std::to_string(r.current.gpus_per_node)},
          {"SLURM_CPUS_PER_TASK", std::to_string(r.current.cpus_per_gpu)}};
}

}  // namespace morph::plugin
