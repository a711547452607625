// job_submit/morph: sizes plan-agnostic jobs (sbatch --morph-model=... --morph-batch=...)
// in slurmctld. A thin C shell over SubmitHandler: it copies what it needs out of the
// job_desc, writes the decision back with strings slurmctld can free, and turns every
// failure into a refusal with a message. It runs under slurmctld's locks, so it does no
// RPC, and no file I/O but reading its configuration again after `scontrol reconfigure`.
// See job_submit_morph(8).
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include "config.h"
#include "libmorph/config/morph_conf.h"
#include "plugins/common/slurm_host.h"
#include "plugins/job_submit/job_record_head.h"
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
using morph::plugin::JobResources;
using morph::plugin::Refusal;
using morph::plugin::replace_slurm_string;
using morph::plugin::SlurmRequest;
using morph::plugin::Verdict;

morph::plugin::SubmitHandler* handler = nullptr;
// slurm_conf.last_update when `handler` was loaded: slurmctld's stamp on its
// configuration, which `scontrol reconfigure` moves (Slurm 22.05 does not init a
// job_submit plugin again unless JobSubmitPlugins changed; reload_due says when to load).
time_t loaded_with = 0;
time_t loaded_at = 0;  // time(nullptr) then

std::string text(const char* s) { return s != nullptr ? s : ""; }

std::optional<std::uint32_t> given(std::uint32_t value) {
  return value == NO_VAL || value == INFINITE || value == 0 ? std::nullopt : std::optional<std::uint32_t>(value);
}

std::optional<std::uint32_t> given16(std::uint16_t value) {
  return value == NO_VAL16 || value == INFINITE16 || value == 0 ? std::nullopt : std::optional<std::uint32_t>(value);
}

void clear(char*& field) {
  if (field != nullptr) slurm_xfree(reinterpret_cast<void**>(&field));
}

void replace_or_clear(char*& field, const std::string& value) {
  if (value.empty()) clear(field);
  else replace_slurm_string(field, value);
}

// The resource fields of a submission or of an update.
JobResources resources(const job_desc_msg_t* job, bool submission) {
  JobResources r;
  r.tres_per_node = text(job->tres_per_node);
  r.tres_per_job = text(job->tres_per_job);
  r.tres_per_task = text(job->tres_per_task);
  r.tres_per_socket = text(job->tres_per_socket);
  r.min_nodes = given(job->min_nodes);
  r.max_nodes = given(job->max_nodes);
  // A submission says which counts the user set; sbatch fills the others with defaults.
  if (!submission || (job->bitflags & JOB_NTASKS_SET)) r.tasks = given(job->num_tasks);
  if (!submission || (job->bitflags & JOB_CPUS_SET)) r.cpus_per_task = given16(job->cpus_per_task);
  r.tasks_per_node = given16(job->ntasks_per_node);
  r.tasks_per_gpu = given16(job->ntasks_per_tres);
  r.min_cpus_per_node = given16(job->pn_min_cpus);
  r.cpus_per_tres = text(job->cpus_per_tres);
  if (job->pn_min_memory != NO_VAL64) {  // 0: --mem=0, all of each node's memory
    r.memory_per_cpu = (job->pn_min_memory & MEM_PER_CPU) != 0;
    r.memory_mb_per_node = job->pn_min_memory & ~MEM_PER_CPU;
  }
  r.mem_per_tres = text(job->mem_per_tres);
  r.required_nodes = text(job->req_nodes);
  r.excluded_nodes = text(job->exc_nodes);
  r.features = text(job->features);
  r.partition = text(job->partition);
  if (!submission) {
    r.clears_tres_per_node = job->tres_per_node != nullptr && *job->tres_per_node == '\0';
    r.clears_features = job->features != nullptr && *job->features == '\0';
  }
  return r;
}

// What scontrol prints for a refused update ("slurm_update error: Node count
// specification invalid"); slurmctld's log says which field and why.
int refusal_code(Refusal refusal) {
  switch (refusal) {
    case Refusal::gpus: return ESLURM_INVALID_GRES;
    case Refusal::nodes: return ESLURM_INVALID_NODE_COUNT;
    case Refusal::tasks: return ESLURM_BAD_TASK_COUNT;
    case Refusal::cpus: return ESLURM_INVALID_CPU_COUNT;
    case Refusal::features: return ESLURM_INVALID_FEATURE;
    case Refusal::partition: return ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE;
    case Refusal::memory: return ESLURM_INVALID_TASK_MEMORY;
    case Refusal::other: break;
  }
  return SLURM_ERROR;
}

}  // namespace

// slurmctld's configuration as it loaded it (libslurmfull, which slurmctld links).
extern "C" slurm_conf_t slurm_conf;

namespace {

// Whether slurmctld's select plugin takes CPUs per GPU: select/cons_tres, or one layered
// over it. Under select/cons_res no job holds a CpusPerTres, and Slurm 22.05 refuses any
// update that names one, "" included (gres_job_state_validate: ESLURM_UNSUPPORTED_GRES).
bool select_takes_cpus_per_tres() {
  return (slurm_conf.select_type != nullptr && std::strstr(slurm_conf.select_type, "cons_tres") != nullptr) ||
         (slurm_conf.select_type_param & CR_OTHER_CONS_TRES) != 0;
}

// Writes `r` into the job_desc of a submission or, `update`, of a job_modify;
// SlurmRequest::validate() has checked that every count fits its field.
void apply(job_desc_msg_t* job, const SlurmRequest& r, bool update) {
  replace_slurm_string(job->tres_per_node, r.tres_per_node);
  if (r.tres_per_job) replace_or_clear(job->tres_per_job, *r.tres_per_job);
  if (r.tres_per_task) replace_or_clear(job->tres_per_task, *r.tres_per_task);
  if (r.tres_per_socket) replace_or_clear(job->tres_per_socket, *r.tres_per_socket);
  // CPUs per GPU are honoured as cpus_per_task. A submission's NULL is none; an update's
  // NULL leaves the job's as it is and "" removes it (_update_job), as when root gave a
  // job of --cpus-per-gpu a Morph record.
  if (update && select_takes_cpus_per_tres()) replace_slurm_string(job->cpus_per_tres, "");
  else clear(job->cpus_per_tres);
  job->min_nodes = job->max_nodes = static_cast<uint32_t>(r.nodes);
  job->num_tasks = static_cast<uint32_t>(r.tasks);
  job->ntasks_per_node = static_cast<uint16_t>(r.tasks_per_node);
  job->cpus_per_task = static_cast<uint16_t>(r.cpus_per_task);
  job->pn_min_cpus = static_cast<uint16_t>(r.min_cpus_per_node);
  job->min_cpus = r.min_cpus();
  if (r.memory_mb_per_node > 0) job->pn_min_memory = r.memory_mb_per_node;
  if (r.features) replace_or_clear(job->features, *r.features);
  replace_slurm_string(job->admin_comment, r.admin_comment);
}

// The slurm.conf slurmctld read (-f, SLURM_CONF or its built-in path), else SLURM_CONF,
// else configure's --with-slurm-conf.
std::string slurm_conf_path() {
  if (slurm_conf.slurm_conf != nullptr && *slurm_conf.slurm_conf != '\0') return slurm_conf.slurm_conf;
  const char* env = std::getenv("SLURM_CONF");
  return env != nullptr && *env != '\0' ? env : MORPH_SLURM_CONF;
}

// Loads morph.conf, the catalog, the fitted models and slurm.conf's partitions; again
// when slurmctld's configuration changed (morph::plugin::reload_due), keeping what it
// had where the new files fail (takes_over).
void load_handler(bool again) {
  loaded_with = slurm_conf.last_update;
  loaded_at = std::time(nullptr);
  const std::string partitions_from = slurm_conf_path();
  auto fresh = std::make_unique<morph::plugin::SubmitHandler>();
  fresh->load(morph::morph_conf_path(""), MORPH_PKGDATADIR "/models.json", partitions_from);
  if (std::string why_not; again && handler != nullptr && !morph::plugin::takes_over(*fresh, *handler, &why_not)) {
    slurm_error("job_submit/morph: not read again after slurmctld's configuration changed: %s; Morph jobs are "
                "sized as before",
                why_not.c_str());
    return;
  }
  delete handler;
  handler = fresh.release();
  const char* when = again ? "read again after slurmctld's configuration changed" : "loaded";
  if (handler->load_error().empty())
    slurm_info("job_submit/morph: %s (%zu partitions from %s)", when, handler->partitions(), partitions_from.c_str());
  else slurm_error("job_submit/morph: Morph jobs will be refused: %s", handler->load_error().c_str());
  if (!handler->partitions_error().empty())
    slurm_error("job_submit/morph: jobs are sized over every node of morph.conf, whatever their partition: %s",
                handler->partitions_error().c_str());
}

// Called with slurmctld's configuration read lock held (job_submit, job_modify).
void reload_if_reconfigured() {
  if (morph::plugin::reload_due(slurm_conf.last_update, loaded_with, loaded_at, std::time(nullptr)))
    load_handler(true);
}

}  // namespace

extern "C" int init(void) {
  return guarded("init", SLURM_SUCCESS, [] {
    delete handler;
    handler = nullptr;  // not left dangling if loading throws
    load_handler(false);
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

// Locks: slurmctld holds at least read locks on its configuration, jobs, nodes and
// partitions on entry, and the plugins' context mutex (job_submit_plugin_submit), so
// this does no RPC, and file I/O only on the first call after slurmctld's configuration
// changed (reload_due).
extern "C" int job_submit(job_desc_msg_t* job, uint32_t submit_uid, char** err_msg) {
  (void)submit_uid;
  return guarded("job_submit", SLURM_ERROR, [&] {
    reload_if_reconfigured();
    if (handler == nullptr || job == nullptr) return SLURM_SUCCESS;
    morph::plugin::SubmitInput in;
    for (uint32_t i = 0; i < job->spank_job_env_size; ++i)
      if (job->spank_job_env[i] != nullptr) in.spank_env.emplace_back(job->spank_job_env[i]);
    in.user = resources(job, true);
    in.het_job_component = job->het_job_offset != NO_VAL;
    const morph::plugin::SubmitOutput out = handler->submit(in);
    if (out.verdict == Verdict::pass_through) return SLURM_SUCCESS;
    if (err_msg != nullptr) replace_slurm_string(*err_msg, out.message);
    if (out.verdict == Verdict::reject) return SLURM_ERROR;  // err_msg says why
    apply(job, out.request, false);
    return SLURM_SUCCESS;
  });
}

// Locks: as job_submit (job_submit_plugin_modify, called from update_job, which holds
// the job write lock). `job_ptr` is slurmctld's record of the job (job_record_head.h).
extern "C" int job_modify(job_desc_msg_t* job, void* job_ptr, uint32_t submit_uid) {
  (void)submit_uid;
  return guarded("job_modify", SLURM_ERROR, [&] {
    reload_if_reconfigured();
    if (handler == nullptr || job == nullptr) return SLURM_SUCCESS;
    const std::string id = job->job_id_str != nullptr ? job->job_id_str : std::to_string(job->job_id);
    morph::plugin::ModifyInput in;
    if (job->admin_comment != nullptr) in.admin_comment = job->admin_comment;
    in.current_admin_comment = morph::plugin::job_admin_comment(job_ptr);
    if (!in.current_admin_comment && job_ptr != nullptr)
      slurm_error("job_submit/morph: job %s: cannot read its record (unexpected job_record_t); updates of its "
                  "resources are not checked",
                  id.c_str());
    in.update = resources(job, false);
    const morph::plugin::ModifyOutput out = handler->modify(in);
    if (out.verdict == Verdict::reject) {
      slurm_error("job_submit/morph: job %s: update refused: %s", id.c_str(), out.message.c_str());
      return refusal_code(out.refusal);
    }
    if (out.verdict == Verdict::accept && out.request) {
      if (out.record_only) replace_slurm_string(job->admin_comment, out.request->admin_comment);
      else apply(job, *out.request, true);
    }
    return SLURM_SUCCESS;
  });
}
