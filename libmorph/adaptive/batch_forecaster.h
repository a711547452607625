// JABAS's GBS forecaster (seed 004 §6.2): the global batch at each of the next adaptation
// steps (one every p iterations), from the batches of the steps so far. Both models work on
// ln B_G, where the exponential growth of Figure 9 is a line: a Gaussian process with a
// periodic kernel over a least-squares line (gaussian_process.h) and Holt's linear trend
// (exponential_smoothing.h). The ensemble is §6.2's: the weighted mean of the two
// predicted batches, equal weights by default ("calculates the average predicted value").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/adaptive/exponential_smoothing.h"
#include "libmorph/adaptive/gaussian_process.h"

namespace morph {

struct BatchForecastOptions {
  int gp_history_steps = 64;  // the GP sees the latest steps only (O(n³) per grid point)
  double gp_weight = 0.5;     // the ensemble's weight of the GP; ESM gets 1 - gp_weight
  std::int64_t min_batch = 1;  // forecasts clamp to [min_batch, max_batch]
  std::int64_t max_batch = std::int64_t{1} << 40;

  // Ceres-style: false with a message naming the bad member.
  bool is_valid(std::string* error) const;
};

struct BatchForecast {
  std::vector<double> gp;        // predicted global batch per step, by each model
  std::vector<double> smoothing;
  std::vector<double> ensemble;  // what the auto-scaler uses
  PeriodicGpFit gp_fit;
  HoltFit holt_fit;
};

// history: the global batch at each adaptation step so far, oldest first; at least 4
// positive values. steps >= 1.
BatchForecast forecast_batches(const std::vector<double>& history, int steps, const BatchForecastOptions& options);

}  // namespace morph
