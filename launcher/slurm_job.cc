#include "launcher/slurm_job.h"

extern "C" {
#include <slurm/slurm.h>
}

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/hostlist.h"

namespace morph::launcher {

std::optional<SlurmJob> load_slurm_job(std::uint32_t job_id, std::string* error) {
  job_info_msg_t* info = nullptr;
  if (slurm_load_job(&info, job_id, SHOW_DETAIL) != SLURM_SUCCESS || info == nullptr) {
    *error = slurm_strerror(slurm_get_errno());
    return std::nullopt;
  }
  std::optional<SlurmJob> job;
  try {
    for (uint32_t i = 0; i < info->record_count; ++i) {
      const slurm_job_info_t& j = info->job_array[i];
      if (j.job_id != job_id) continue;
      job = SlurmJob{j.admin_comment != nullptr ? j.admin_comment : "",
                     j.nodes != nullptr ? expand_hostlist(j.nodes, "the job's NodeList") : std::vector<std::string>{},
                     j.num_cpus, j.restart_cnt};
    }
  } catch (const Error& e) {
    *error = e.what();
    job.reset();
  }
  slurm_free_job_info_msg(info);
  if (!job && error->empty()) *error = "slurmctld does not know the job";
  return job;
}

void shrink_slurm_job(std::uint32_t job_id, int nodes) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  desc.job_id = job_id;
  desc.min_nodes = static_cast<uint32_t>(nodes);
  if (slurm_update_job(&desc) != SLURM_SUCCESS)
    throw Error(fmt::format("slurmctld refused to shrink job {} to {} nodes: {}", job_id, nodes,
                            slurm_strerror(slurm_get_errno())));
}

}  // namespace morph::launcher
