// job_submit/morph: sizes plan-agnostic jobs (sbatch --morph-model=... --morph-batch=...)
// in slurmctld. A thin C shell over SubmitHandler: it copies what it needs out of the
// job_desc, writes the decision back with strings slurmctld can free, and turns every
// failure into a refusal with a message. It runs under slurmctld's locks, so it does no
// RPC and no file I/O after init(). See job_submit_morph(8).
#include <cstdlib>
#include <string>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include "config.h"
#include "plugins/common/slurm_host.h"
#include "plugins/job_submit/submit_handler.h"

// Namespace-scope const has internal linkage in C++: the symbols Slurm looks up are
// declared extern "C" and extern first.
extern "C" {
MORPH_PLUGIN_EXPORT extern const char plugin_name[];
MORPH_PLUGIN_EXPORT extern const char plugin_type[];
MORPH_PLUGIN_EXPORT extern const uint32_t plugin_version;
const char plugin_name[] = "Morph plan-agnostic job sizing";
const char plugin_type[] = "job_submit/morph";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

MORPH_PLUGIN_EXPORT int init(void);
MORPH_PLUGIN_EXPORT int fini(void);
MORPH_PLUGIN_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg);
MORPH_PLUGIN_EXPORT int job_modify(job_desc_msg_t* job_desc, void* job_ptr, uint32_t submit_uid);
}

namespace {

using morph::plugin::guarded;
using morph::plugin::replace_slurm_string;
using morph::plugin::SlurmRequest;
using morph::plugin::Verdict;

morph::plugin::SubmitHandler* handler = nullptr;

std::string text(const char* s) { return s != nullptr ? s : ""; }

std::uint32_t given(std::uint32_t value) { return value == NO_VAL || value == 0 ? 0 : value; }

void clear(char*& field) {
  if (field != nullptr) slurm_xfree(reinterpret_cast<void**>(&field));
}

void apply(job_desc_msg_t* job, const SlurmRequest& r) {
  replace_slurm_string(job->tres_per_node, r.tres_per_node);
  clear(job->tres_per_job);
  clear(job->tres_per_task);
  clear(job->tres_per_socket);
  job->min_nodes = job->max_nodes = static_cast<uint32_t>(r.nodes);
  job->num_tasks = static_cast<uint32_t>(r.tasks);
  job->ntasks_per_node = static_cast<uint16_t>(r.tasks_per_node);
  job->cpus_per_task = static_cast<uint16_t>(r.cpus_per_task);
  job->min_cpus = static_cast<uint32_t>(r.tasks * r.cpus_per_task);
  if (r.memory_mb_per_node > 0) job->pn_min_memory = r.memory_mb_per_node;
  replace_slurm_string(job->admin_comment, r.admin_comment);
}

}  // namespace

extern "C" int init(void) {
  return guarded("init", SLURM_SUCCESS, [] {
    delete handler;
    handler = new morph::plugin::SubmitHandler;
    const char* conf = std::getenv("MORPH_CONF");
    handler->load(conf != nullptr && *conf != '\0' ? conf : MORPH_SYSCONFDIR "/morph.conf",
                  MORPH_PKGDATADIR "/models.json");
    if (handler->load_error().empty()) slurm_info("job_submit/morph: loaded");
    else slurm_error("job_submit/morph: Morph jobs will be refused: %s", handler->load_error().c_str());
    return SLURM_SUCCESS;  // never stop slurmctld: other jobs keep flowing
  });
}

extern "C" int fini(void) {
  return guarded("fini", SLURM_SUCCESS, [] {
    delete handler;
    handler = nullptr;
    return SLURM_SUCCESS;
  });
}

extern "C" int job_submit(job_desc_msg_t* job, uint32_t submit_uid, char** err_msg) {
  (void)submit_uid;
  return guarded("job_submit", SLURM_ERROR, [&] {
    if (handler == nullptr || job == nullptr) return SLURM_SUCCESS;
    morph::plugin::SubmitInput in;
    for (uint32_t i = 0; i < job->spank_job_env_size; ++i)
      if (job->spank_job_env[i] != nullptr) in.spank_env.emplace_back(job->spank_job_env[i]);
    in.tres_per_node = text(job->tres_per_node);
    in.tres_per_job = text(job->tres_per_job);
    in.min_nodes = given(job->min_nodes);
    const morph::plugin::SubmitOutput out = handler->submit(in);
    if (out.verdict == Verdict::pass_through) return SLURM_SUCCESS;
    if (err_msg != nullptr) replace_slurm_string(*err_msg, out.message);
    if (out.verdict == Verdict::reject) return SLURM_ERROR;  // err_msg says why
    apply(job, out.request);
    return SLURM_SUCCESS;
  });
}

extern "C" int job_modify(job_desc_msg_t* job, void* job_ptr, uint32_t submit_uid) {
  (void)job_ptr;  // job_record_t is not part of Slurm's public headers
  (void)submit_uid;
  return guarded("job_modify", SLURM_ERROR, [&] {
    if (handler == nullptr || job == nullptr) return SLURM_SUCCESS;
    morph::plugin::ModifyInput in;
    if (job->admin_comment != nullptr) in.admin_comment = job->admin_comment;
    in.tres_per_node = text(job->tres_per_node);
    in.min_nodes = given(job->min_nodes);
    const morph::plugin::ModifyOutput out = handler->modify(in);
    if (out.verdict == Verdict::reject) {
      slurm_error("job_submit/morph: job %s: update refused: %s", job->job_id_str != nullptr ? job->job_id_str : "?",
                  out.message.c_str());
      return SLURM_ERROR;
    }
    if (out.verdict == Verdict::accept && out.request) apply(job, *out.request);
    return SLURM_SUCCESS;
  });
}
