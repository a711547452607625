// What morphrun --driver asks slurmctld about its own job (libslurm): the record in its
// AdminComment and its nodes, and the shrink it applies when the new plan needs fewer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace morph::launcher {

struct SlurmJob {
  std::string admin_comment;
  std::vector<std::string> nodes;  // the allocation's nodes, in order
  std::uint32_t cpus = 0;
  std::uint32_t restarts = 0;      // SLURM_RESTART_COUNT
};

// One slurm_load_job RPC; nullopt with `error` set when slurmctld does not answer.
std::optional<SlurmJob> load_slurm_job(std::uint32_t job_id, std::string* error);

// Gives nodes back: the job keeps its first `nodes` nodes (scontrol update JobId=..
// NumNodes=..). Throws morph::Error with slurmctld's reason.
void shrink_slurm_job(std::uint32_t job_id, int nodes);

}  // namespace morph::launcher
