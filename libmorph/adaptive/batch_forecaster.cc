#include "libmorph/adaptive/batch_forecaster.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

bool BatchForecastOptions::is_valid(std::string* error) const {
  if (gp_history_steps < 4) {
    *error = fmt::format("GP history {} must be >= 4 steps", gp_history_steps);
    return false;
  }
  if (!(gp_weight >= 0 && gp_weight <= 1)) {
    *error = fmt::format("GP weight {} must lie in [0, 1]", gp_weight);
    return false;
  }
  if (min_batch < 1 || min_batch > max_batch) {
    *error = fmt::format("batch bounds {}:{} must satisfy 1 <= min <= max", min_batch, max_batch);
    return false;
  }
  return true;
}

BatchForecast forecast_batches(const std::vector<double>& history, int steps, const BatchForecastOptions& options) {
  if (std::string error; !options.is_valid(&error)) throw Error("batch forecast: " + error);
  if (steps < 1) throw Error(fmt::format("batch forecast: {} steps asked, at least 1 needed", steps));
  if (history.size() < 4) throw Error(fmt::format("batch forecast: {} past batches, at least 4 needed", history.size()));
  std::vector<double> log_batch;
  for (double b : history) {
    if (!(b > 0) || !std::isfinite(b)) throw Error(fmt::format("batch forecast: past global batch {} must be > 0", b));
    log_batch.push_back(std::log(b));
  }
  BatchForecast out;
  out.holt_fit = fit_holt(log_batch);
  const std::size_t window = std::min(log_batch.size(), static_cast<std::size_t>(options.gp_history_steps));
  const std::vector<double> recent(log_batch.end() - static_cast<std::ptrdiff_t>(window), log_batch.end());
  out.gp_fit = fit_periodic_gp(recent);

  const std::vector<double> gp_log = predict_periodic_gp(out.gp_fit, static_cast<int>(window), steps);
  const std::vector<double> holt_log = predict_holt(out.holt_fit, steps);
  const double lo = static_cast<double>(options.min_batch), hi = static_cast<double>(options.max_batch);
  for (int h = 0; h < steps; ++h) {
    const double gp = std::clamp(std::exp(gp_log[static_cast<std::size_t>(h)]), lo, hi);
    const double esm = std::clamp(std::exp(holt_log[static_cast<std::size_t>(h)]), lo, hi);
    out.gp.push_back(gp);
    out.smoothing.push_back(esm);
    // Seed 004 §6.2: ensemble = mean of the two models' predictions (weights w, 1 - w)
    out.ensemble.push_back(options.gp_weight * gp + (1 - options.gp_weight) * esm);
  }
  return out;
}

}  // namespace morph
