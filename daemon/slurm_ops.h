// The Slurm actions morphd takes on a job, behind an interface: libslurm in morphd
// (slurm_client.cc), a fake in the tests of the reconfiguration state machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "daemon/cluster_snapshot.h"

namespace morph::daemon {

class SlurmOps {
 public:
  virtual ~SlurmOps() = default;
  // The job as slurmctld has it now; nullopt when slurmctld does not answer or has
  // forgotten it (`gone` tells which).
  virtual std::optional<SlurmJob> job(std::uint32_t id, bool* gone) = 0;
  // Each returns "" on success, else slurmctld's reason.
  // A pending job's update names its node count too, so that its resources follow the
  // record (job_submit_morph applies them); a running job's only sets the record, and
  // morphrun --driver gives nodes back after its checkpoint.
  virtual std::string set_record(std::uint32_t id, const std::string& admin_comment, bool pending) = 0;
  virtual std::string signal_batch(std::uint32_t id, int signal) = 0;  // the batch step: morphrun --driver
  virtual std::string requeue_hold(std::uint32_t id) = 0;              // kills the job: the last resort
  virtual std::string hold(std::uint32_t id) = 0;
  virtual std::string release(std::uint32_t id) = 0;
};

}  // namespace morph::daemon
