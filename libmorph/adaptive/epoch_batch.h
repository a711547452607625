// The batch morphd plans an adaptive job's next epoch for: JABAS's auto-scaling decision
// (seed 004 §6.3) made with Morph's own performance model. The decisions fall at whole
// epochs of `epoch_steps` adaptation steps (the forecast never sees a partial epoch, so it
// holds, and so does the plan, until the next one ends); the forecaster (batch_forecaster.h)
// predicts the next epoch's batches B_1..B_E; the policy then plans the job for their mean.
// Why the mean: under one layout (dp, tp, pp, micro-batch) only the accumulation steps
// follow the batch, so an iteration's time is affine in it, t(B) = a + b·B, and §6.3's
// epoch time Σ_t p·t(B_t) = E·p·t(mean B_t). Morphling's Algorithm 1 and HAS then choose
// the GPU count and type for that batch like for any other job (more GPUs as the batch
// grows, fewer as it falls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/adaptive/batch_forecaster.h"
#include "libmorph/adaptive/batch_trajectory.h"
#include "libmorph/request/morph_request.h"  // AdaptiveBatchRange

namespace morph {

struct EpochBatchOptions {
  int epoch_steps = 10;  // E: adaptation steps per decision (morph.conf AdaptiveEpochSteps)
  BatchForecastOptions forecast;  // its batch bounds are the job's range

  bool is_valid(std::string* error) const;
};

struct EpochBatch {
  std::int64_t batch = 0;       // what to plan for: the starting batch until a forecast exists
  bool forecast = false;        // whether `batch` comes from a forecast
  int epochs = 0;               // whole epochs seen
  std::vector<double> batches;  // the forecast B_1..B_E (empty without one)
};

// A batch that many data-parallel sizes divide: B rounded to the nearest multiple of
// 2^(⌊log2 B⌋ − 3) (8 batches per octave, so a batch from 128 up is a multiple of 16;
// exact below 16), then into `range`.
std::int64_t plannable_batch(double batch, const AdaptiveBatchRange& range);

// `trajectory`: the job's batches so far (batch_trajectory.h); `start`: its --morph-batch.
// A forecast needs one whole epoch and at least 4 adaptation steps.
EpochBatch epoch_batch(const BatchTrajectory& trajectory, std::int64_t start, const AdaptiveBatchRange& range,
                       const EpochBatchOptions& options);

}  // namespace morph
