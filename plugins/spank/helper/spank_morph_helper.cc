// spank_morph_helper.so: the C++ half of spank_morph, loaded on demand. It reads a job's
// record from slurmctld and exports the plan to the tasks, and, when plugstack.conf
// names them, checks a request against the catalog and morph.conf in the client. Every
// entry point is C; no exception leaves it.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/record/job_record.h"
#include "libmorph/record/plan_env.h"
#include "libmorph/request/morph_request.h"
#include "libmorph/request/option_check.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "plugins/common/slurm_host.h"

extern "C" {
MORPH_PLUGIN_EXPORT int morph_helper_export_plan(spank_t sp);
MORPH_PLUGIN_EXPORT int morph_helper_check_request(const char* const* values, const char* catalog, const char* conf,
                                                   char* error, size_t error_size);
}

namespace {

// The job's AdminComment, from slurmctld (slurm_load_job comes from the slurmstepd that
// loaded us). Empty when the job has none.
std::string admin_comment(uint32_t job_id) {
  job_info_msg_t* info = nullptr;
  if (slurm_load_job(&info, job_id, SHOW_DETAIL) != SLURM_SUCCESS || info == nullptr)
    throw morph::Error("cannot load the job record from slurmctld");
  std::string comment;
  for (uint32_t i = 0; i < info->record_count; ++i)
    if (info->job_array[i].job_id == job_id && info->job_array[i].admin_comment != nullptr)
      comment = info->job_array[i].admin_comment;
  slurm_free_job_info_msg(info);
  return comment;
}

int export_plan(spank_t sp) {
  uint32_t job_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) return 0;
  const std::string comment = admin_comment(job_id);
  if (!morph::is_job_record(comment)) {
    slurm_error("morph: job %u has no Morph plan in its AdminComment (is JobSubmitPlugins=morph set?)", job_id);
    return 0;
  }
  const morph::JobRecord record = morph::parse_admin_comment(comment);
  for (const auto& [name, value] : morph::plan_environment(record))
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      slurm_error("morph: job %u: cannot set %s", job_id, name.c_str());
      return -1;
    }
  // The job's allocation (the batch step itself has one node).
  char nodes[32] = {};
  if (spank_getenv(sp, "SLURM_JOB_NUM_NODES", nodes, sizeof nodes) == ESPANK_SUCCESS &&
      std::atoi(nodes) != record.current.nodes) {
    slurm_error("morph: job %u runs on %s nodes but its plan is for %d; was it updated without its AdminComment?",
                job_id, nodes, record.current.nodes);
    spank_setenv(sp, "MORPH_PLAN_MISMATCH", "1", 1);
  }
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

extern "C" int morph_helper_export_plan(spank_t sp) {
  return morph::plugin::guarded("export_plan", -1, [&] { return export_plan(sp); });
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
