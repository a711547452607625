// Every Morph job morphd sees goes into the state database at its first round, and each
// plan it runs under from when it starts: `morph status` and the timelines cover the jobs
// morphd never had to move, and their iteration reports (accepted for known jobs only)
// have a row to refer to.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "daemon/cluster_snapshot.h"
#include "daemon/store/state_store.h"

namespace morph::daemon {

// A job's time without GPUs since its submission (docs/policy.md, "Anti-starvation"),
// counted on from `last` (none: the job is new to the database) to the snapshot at `now_s`:
// what it was at the last count keeps for the time since. Slurm resets a requeued job's
// submit time, so only the first count reads it.
store::JobWait next_wait(const std::optional<store::JobWait>& last, const SlurmJob& job, double now_s);

// The plan period of `record` (a morph:v1 AdminComment) from `from_s`, with the throughput
// its iter_ms predicts. Throws morph::Error for a record that cannot be read.
store::PlanPeriod plan_period(std::uint32_t job, double from_s, const std::string& record);

class JobTracker {
 public:
  explicit JobTracker(store::StateStore& state) : state_(state) {}
  // Records the snapshot's new Morph jobs, every job's waiting time (next_wait) and the
  // plans its running ones have that are not their last recorded one. Jobs whose records
  // cannot be read are left out. A job listed as ended and then alive again (scontrol
  // requeue of a completed job) is the same job, reopened; one first seen alive under the
  // id of an ended job, or of another user or model, is a new job under a reused id, once
  // morphd's reconfiguration of that id has ended: until then the job is left alone.
  void track(const ClusterSnapshot& snapshot);

 private:
  store::StateStore& state_;
  std::set<std::uint32_t> known_;                  // recorded in the database
  std::set<std::uint32_t> ended_;                  // listed as ended in a round
  std::map<std::uint32_t, std::string> last_plan_;  // the record of each running job's last plan
  std::map<std::uint32_t, store::JobWait> last_wait_;  // each job's last count, as written
};

}  // namespace morph::daemon
