#include "daemon/job_owners.h"

#include <fmt/format.h>

namespace morph::daemon {

void JobOwners::reset(const std::vector<SlurmJob>& jobs) {
  owners_.clear();
  unknown_.clear();
  for (const SlurmJob& j : jobs) owners_.emplace(j.id, static_cast<uid_t>(j.user_id));
  lookups_left_ = kLookupsPerSnapshot;
}

JobOwners::Answer JobOwners::owner(std::uint32_t job) {
  using Kind = Answer::Kind;
  if (const auto known = owners_.find(job); known != owners_.end()) return {Kind::owner, known->second, {}};
  if (unknown_.contains(job)) return {Kind::no_such_job, 0, {}};
  if (lookups_left_ <= 0)
    return {Kind::later, 0,
            fmt::format("more than {} reports of jobs outside morphd's view of the queue since it was read",
                        kLookupsPerSnapshot)};
  --lookups_left_;
  bool gone = false;
  const std::optional<SlurmJob> j = lookup_(job, &gone);
  if (j) {
    owners_.emplace(job, static_cast<uid_t>(j->user_id));
    return {Kind::owner, static_cast<uid_t>(j->user_id), {}};
  }
  if (!gone) return {Kind::later, 0, "slurmctld did not answer who owns it"};
  unknown_.insert(job);
  return {Kind::no_such_job, 0, {}};
}

}  // namespace morph::daemon
