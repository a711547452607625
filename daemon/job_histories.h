// What the state database holds about the jobs of a round: each Morph job's plans and
// reported iterations, for the view (job_measurements.h). JobTracker (job_tracker.h)
// records the jobs and their plans from their first round, so that the reports are kept
// from each job's start.
#pragma once

#include "daemon/batch_histories.h"
#include "daemon/cluster_snapshot.h"
#include "daemon/job_measurements.h"
#include "daemon/store/state_store.h"

namespace morph::daemon {

// The histories of the snapshot's recorded Morph jobs (not done): their plans and, from
// the time before the first and from each plan, the last `window` observations; for an
// adaptive job its batch changes since its first report, from `batches` (which morphd
// keeps across rounds; none: read whole).
JobHistories read_histories(const store::StateStore& state, const ClusterSnapshot& snapshot,
                            BatchHistories* batches = nullptr, int window = MeasurementOptions{}.window);

}  // namespace morph::daemon
