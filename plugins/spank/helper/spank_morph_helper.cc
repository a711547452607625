// spank_morph_helper.so: the C++ half of spank_morph, loaded on demand. In slurmstepd it
// gives a step's tasks their plan (step_plan.h); in srun inside a Morph allocation it
// sets srun's defaults from the job's record; when plugstack.conf names them, it checks a
// request against the catalog and morph.conf in the client. Every entry point is C; no
// exception leaves it.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <fmt/format.h>

#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/request/morph_request.h"
#include "libmorph/request/option_check.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "plugins/common/slurm_host.h"
#include "plugins/spank/helper/step_plan.h"

extern "C" {
MORPH_PLUGIN_EXPORT int morph_helper_export_plan(spank_t sp, int tries, char* error, size_t error_size);
MORPH_PLUGIN_EXPORT int morph_helper_srun_defaults(uint32_t job_id, int tries, char* error, size_t error_size);
MORPH_PLUGIN_EXPORT int morph_helper_check_request(const char* const* values, const char* catalog, const char* conf,
                                                   char* error, size_t error_size);
}

namespace {

using morph::plugin::JobView;
using morph::plugin::PlanFailure;
using morph::plugin::StepPlan;

// One slurm_load_job RPC (libslurm comes from the slurmstepd or srun that loaded us).
morph::plugin::JobLoader slurm_loader(uint32_t job_id) {
  return [job_id](std::string* error) -> std::optional<JobView> {
    job_info_msg_t* info = nullptr;
    if (slurm_load_job(&info, job_id, SHOW_DETAIL) != SLURM_SUCCESS || info == nullptr) {
      *error = slurm_strerror(slurm_get_errno());
      return std::nullopt;
    }
    const std::unique_ptr<job_info_msg_t, void (*)(job_info_msg_t*)> owned(info, slurm_free_job_info_msg);
    std::optional<JobView> job;
    for (uint32_t i = 0; i < info->record_count; ++i) {
      const slurm_job_info_t& j = info->job_array[i];
      if (j.job_id != job_id) continue;
      job = JobView{j.admin_comment != nullptr ? j.admin_comment : "", static_cast<int>(j.num_nodes),
                    j.tres_per_node != nullptr ? j.tres_per_node : ""};
    }
    if (!job) *error = "slurmctld does not know the job";
    return job;
  };
}

void sleep_for(std::chrono::milliseconds pause) { std::this_thread::sleep_for(pause); }

morph::plugin::RetryPolicy retry_policy(int tries) {
  morph::plugin::RetryPolicy retry;
  if (tries > 0) retry.tries = tries;
  return retry;
}

// A variable of the step's environment ("" when unset). A record longer than the buffer
// (an inline model, many GPU groups) is read again in a larger one: taken for absent, it
// made every node of the step read slurmctld.
std::string step_env(spank_t sp, const char* name) {
  for (std::size_t size = 8192; size <= (1u << 20); size *= 4) {
    std::vector<char> value(size);
    const spank_err_t rc = spank_getenv(sp, name, value.data(), static_cast<int>(value.size()));
    if (rc == ESPANK_SUCCESS) return value.data();
    if (rc != ESPANK_NOSPACE) return {};
  }
  return {};
}

int export_plan(spank_t sp, int tries, char* error, size_t error_size) {
  morph::plugin::StepContext step;
  uint32_t step_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &step.job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS) {
    std::snprintf(error, error_size, "morph: cannot tell which job step this is");
    return morph::plugin::kExitRefuse;
  }
  const bool interactive = step_id == SLURM_INTERACTIVE_STEP;
  step.reads_controller = step_id == SLURM_BATCH_SCRIPT || interactive;
  for (const char* name : {"MORPH_RECORD", "MORPH_RECORD_JOB", "SLURM_JOB_NUM_NODES", "SLURM_GPUS_ON_NODE"})
    if (std::string value = step_env(sp, name); !value.empty()) step.env[name] = value;
  StepPlan plan = morph::plugin::step_plan(step, slurm_loader(step.job_id), retry_policy(tries), sleep_for);
  if (plan.failure != PlanFailure::none) {
    const std::string message =
        plan.message + (plan.failure == PlanFailure::retry
                             ? fmt::format("; the task exits with {0} so that Slurm requeues the job (RequeueExit={0} "
                                           "in slurm.conf)",
                                           morph::plugin::kExitRetry)
                             : fmt::format("; the task exits with {}", morph::plugin::kExitRefuse));
    slurm_info("%s", message.c_str());  // the task prints it on its standard error
    std::snprintf(error, error_size, "%s", message.c_str());
    return plan.exit_code();
  }
  // salloc's shell under LaunchParameters=use_interactive_step: srun in it starts one
  // task per GPU, as in a batch script.
  if (interactive)
    for (const auto& [name, value] : morph::plugin::srun_defaults(*plan.record)) plan.env.emplace_back(name, value);
  for (const auto& [name, value] : plan.env)
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      std::snprintf(error, error_size, "morph: job %u: cannot set %s for its tasks", step.job_id, name.c_str());
      return morph::plugin::kExitRefuse;
    }
  for (const std::string& name : plan.unset)
    if (spank_unsetenv(sp, name.c_str()) != ESPANK_SUCCESS) {
      std::snprintf(error, error_size, "morph: job %u: cannot unset %s for its tasks", step.job_id, name.c_str());
      return morph::plugin::kExitRefuse;
    }
  return 0;
}

// srun inside a Morph allocation (salloc's shell): the plan and one task per GPU as
// defaults in srun's own environment, which srun reads after this (its input variables).
int srun_defaults(uint32_t job_id, int tries, char* error, size_t error_size) {
  morph::plugin::StepContext step;
  step.job_id = job_id;
  step.reads_controller = true;
  morph::plugin::RetryPolicy retry = retry_policy(tries);
  retry.interrupted = [] {  // srun blocks these until its plugins are loaded: a Ctrl-C waits
    sigset_t pending;
    if (sigpending(&pending) != 0) return false;
    return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1 ||
           sigismember(&pending, SIGHUP) == 1;
  };
  StepPlan plan = morph::plugin::step_plan(step, slurm_loader(job_id), retry, sleep_for);
  if (plan.failure != PlanFailure::none) {
    std::snprintf(error, error_size, "%s", plan.message.c_str());
    return -1;
  }
  for (const auto& [name, value] : morph::plugin::srun_defaults(*plan.record))
    if (std::getenv(name.c_str()) == nullptr) setenv(name.c_str(), value.c_str(), 1);
  for (const auto& [name, value] : plan.env) setenv(name.c_str(), value.c_str(), 1);
  for (const std::string& name : plan.unset) unsetenv(name.c_str());
  return 0;
}

void check_request(const char* const* values, const std::string& catalog, const std::string& conf) {
  morph::MorphRequest request;
  for (int i = 0; i < morph_option_count; ++i)
    if (values[i] != nullptr) morph::set_morph_option(request, morph_option_table[i].name, values[i]);
  if (!catalog.empty()) morph::Catalog::load_file(catalog).resolve(request.model, "--morph-model");
  if (!conf.empty() && !request.gpu_types.empty()) {
    const morph::MorphConfig config = morph::load_morph_conf(conf);
    for (const std::string& type : request.gpu_types)
      if (config.cluster.find_gpu_type(type) == nullptr)
        throw morph::Error("--morph-gpu-type: this cluster has no GPU type " + morph::quote(type));
  }
}

}  // namespace

// Only slurmctld's silence is worth a requeue (75): a failure here, local and repeatable
// (an exception, a SPANK call refused), would requeue the job for ever; it exits 78.
extern "C" int morph_helper_export_plan(spank_t sp, int tries, char* error, size_t error_size) {
  return morph::plugin::guarded(
      "export_plan", morph::plugin::kExitRefuse, [&] { return export_plan(sp, tries, error, error_size); }, error,
      error_size);
}

extern "C" int morph_helper_srun_defaults(uint32_t job_id, int tries, char* error, size_t error_size) {
  return morph::plugin::guarded(
      "srun_defaults", -1, [&] { return srun_defaults(job_id, tries, error, error_size); }, error, error_size);
}

extern "C" int morph_helper_check_request(const char* const* values, const char* catalog, const char* conf, char* error,
                                          size_t error_size) {
  try {
    check_request(values, catalog != nullptr ? catalog : "", conf != nullptr ? conf : "");
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
  } catch (...) {
    std::snprintf(error, error_size, "unknown error");
  }
  return -1;
}
