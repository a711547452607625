// Each adaptive job's batch history (libmorph/adaptive/batch_trajectory.h) from its first
// report, kept across rounds: a round reads only the observations recorded since the one
// before, and the history keeps the steps where the batch changed. Reading a window of
// the newest reports instead moved the epoch boundaries with the window once a job had
// run longer than it, and so the planned batch changed every adaptation step.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "daemon/store/state_store.h"
#include "libmorph/adaptive/batch_trajectory.h"

namespace morph::daemon {

class BatchHistories {
 public:
  // The job's batch changes (BatchHistory::changes()), with what it reported since the
  // last call; on the first, everything it reported.
  std::vector<StepBatch> update(const store::StateStore& state, store::JobId job);
  // Forgets the jobs not in `jobs` (ended, or no longer adaptive).
  void keep_only(const std::set<store::JobId>& jobs);

 private:
  struct Job {
    BatchHistory history;
    store::Observation last;  // the last observation read (its time and id)
  };
  std::map<store::JobId, Job> jobs_;
};

}  // namespace morph::daemon
