// A job's global batch at each of its adaptation steps, recovered from what it reported:
// the samples of every iteration (morphrun's metrics, morphd's observations). The batch
// controller (batch_controller.h) changes the batch only after iterations p, 2p, ..., so
// every change begins at an iteration k·p + 1 and p is the greatest common divisor of
// (change − 1) over the changes seen. This is the history JABAS's forecaster reads
// (seed 004 §6.2: "the GBS at each adaptation step").
#pragma once

#include <cstdint>
#include <vector>

namespace morph {

struct StepBatch {
  std::int64_t step = 0;   // 1-based iteration number
  std::int64_t batch = 0;  // samples that iteration trained
};

struct BatchTrajectory {
  std::int64_t interval = 0;    // p; 0 when the batch never changed (no change, no p)
  std::vector<double> batches;  // at adaptation steps 1, 2, ...: iterations (k−1)p+1 .. kp
};

// `steps` in report order; a step reported twice (redone after a restart from an earlier
// checkpoint) counts as reported last. Steps missing from the reports take the batch of
// the step before them. Throws morph::Error on a step < 1 or a batch < 1.
BatchTrajectory batch_trajectory(const std::vector<StepBatch>& steps);

}  // namespace morph
