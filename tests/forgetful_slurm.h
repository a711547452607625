// A slurmctld that has forgotten every job, for the scheduler's tests and morphd's
// benchmark: every reconfiguration morphd begins rolls back at once, so a round's moves
// are decided and journalled without touching Slurm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "daemon/slurm_ops.h"

namespace morph::test {

class ForgetfulSlurm : public daemon::SlurmOps {
 public:
  std::optional<daemon::SlurmJob> job(std::uint32_t, bool* gone) override {
    *gone = true;
    return std::nullopt;
  }
  std::string set_record(std::uint32_t, const std::string&, bool) override { return {}; }
  std::string signal_batch(std::uint32_t, int) override { return {}; }
  std::string requeue_hold(std::uint32_t) override { return {}; }
  std::string hold(std::uint32_t) override { return {}; }
  std::string release(std::uint32_t) override { return {}; }
};

}  // namespace morph::test
