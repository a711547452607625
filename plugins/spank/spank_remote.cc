#include "plugins/spank/spank_remote.h"

#include <cstdlib>
#include <string>

extern "C" {
#include <slurm/slurm.h>
}

#include "libmorph/record/job_record.h"
#include "libmorph/record/plan_env.h"
#include "libmorph/util/error.h"
#include "plugins/common/slurm_host.h"
#include "plugins/spank/spank_state.h"

namespace morph::spank {
namespace {

// The job's AdminComment, from slurmctld (slurm_load_job comes from the slurmstepd that
// loaded us). Empty when the job has none.
std::string admin_comment(uint32_t job_id) {
  job_info_msg_t* info = nullptr;
  if (slurm_load_job(&info, job_id, SHOW_DETAIL) != SLURM_SUCCESS || info == nullptr)
    throw Error("cannot load the job record from slurmctld");
  std::string comment;
  for (uint32_t i = 0; i < info->record_count; ++i)
    if (info->job_array[i].job_id == job_id && info->job_array[i].admin_comment != nullptr)
      comment = info->job_array[i].admin_comment;
  slurm_free_job_info_msg(info);
  return comment;
}

}  // namespace

int export_plan(spank_t sp) {
  if (!state().any_option) return 0;  // not a Morph job
  uint32_t job_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) return 0;
  const std::string comment = admin_comment(job_id);
  if (!is_job_record(comment)) {
    slurm_error("morph: job %u has no Morph plan in its AdminComment (is JobSubmitPlugins=morph set?)", job_id);
    return 0;
  }
  JobRecord record;
  try {
    record = parse_admin_comment(comment);
  } catch (const Error& e) {
    slurm_error("morph: job %u: %s", job_id, e.what());
    return -1;
  }
  for (const auto& [name, value] : plan_environment(record))
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      slurm_error("morph: job %u: cannot set %s", job_id, name.c_str());
      return -1;
    }
  // The job's allocation (the batch step itself has one node).
  char job_nodes[32] = {};
  if (spank_getenv(sp, "SLURM_JOB_NUM_NODES", job_nodes, sizeof job_nodes) == ESPANK_SUCCESS &&
      std::atoi(job_nodes) != record.current.nodes) {
    slurm_error("morph: job %u runs on %s nodes but its plan is for %d; was it updated without its AdminComment?",
                job_id, job_nodes, record.current.nodes);
    spank_setenv(sp, "MORPH_PLAN_MISMATCH", "1", 1);
  }
  return 0;
}

}  // namespace morph::spank
