// Who owns the job a report names: only its owner may report it (docs/launcher.md,
// "Reporting to morphd"). morphd's latest snapshot answers for free; a job outside it
// (submitted since) is asked of slurmctld once and remembered until the next snapshot, as
// is a job slurmctld does not have, and at most kLookupsPerSnapshot such questions are
// asked between two snapshots: a user's reports naming other job ids each cost slurmctld
// an RPC. Beyond that, or while slurmctld does not answer, a report waits (its client
// keeps it for its next flush).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/cluster_snapshot.h"

namespace morph::daemon {

class JobOwners {
 public:
  static constexpr int kLookupsPerSnapshot = 16;

  struct Answer {
    enum class Kind { owner, no_such_job, later } kind = Kind::later;
    uid_t uid = 0;    // kind owner
    std::string why;  // kind later
  };
  // The job as slurmctld has it; nullopt with *gone false when slurmctld did not answer
  // (SlurmOps::job).
  using Lookup = std::function<std::optional<SlurmJob>(std::uint32_t job, bool* gone)>;

  explicit JobOwners(Lookup lookup) : lookup_(std::move(lookup)) {}
  // A new snapshot: its jobs' owners, and a fresh allowance of lookups.
  void reset(const std::vector<SlurmJob>& jobs);
  Answer owner(std::uint32_t job);

 private:
  Lookup lookup_;
  std::map<std::uint32_t, uid_t> owners_;
  std::set<std::uint32_t> unknown_;  // slurmctld has no such job, asked since the snapshot
  int lookups_left_ = kLookupsPerSnapshot;
};

}  // namespace morph::daemon
