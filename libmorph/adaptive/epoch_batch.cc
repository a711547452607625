#include "libmorph/adaptive/epoch_batch.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

bool EpochBatchOptions::is_valid(std::string* error) const {
  if (epoch_steps < 1) {
    *error = fmt::format("epoch of {} adaptation steps: at least 1 needed", epoch_steps);
    return false;
  }
  return forecast.is_valid(error);
}

std::int64_t plannable_batch(double batch, const AdaptiveBatchRange& range) {
  if (!(batch >= 1) || !std::isfinite(batch)) throw Error(fmt::format("plannable batch: {} is no batch", batch));
  const int octave = static_cast<int>(std::floor(std::log2(batch)));
  const double quantum = std::ldexp(1.0, std::max(0, octave - 3));
  const auto rounded = static_cast<std::int64_t>(std::llround(batch / quantum) * static_cast<long long>(quantum));
  return std::clamp(rounded, range.min_batch, range.max_batch);
}

EpochBatch epoch_batch(const BatchTrajectory& trajectory, std::int64_t start, const AdaptiveBatchRange& range,
                       const EpochBatchOptions& options) {
  if (std::string error; !options.is_valid(&error)) throw Error("epoch batch: " + error);
  if (start < range.min_batch || start > range.max_batch)
    throw Error(fmt::format("epoch batch: the starting batch {} is outside {}:{}", start, range.min_batch,
                            range.max_batch));
  EpochBatch out;
  out.batch = start;
  // Epochs count from the job's first adaptation step, wherever its reports begin.
  const std::int64_t before = trajectory.batches.empty() ? 0 : trajectory.first - 1;
  const std::int64_t seen = before + static_cast<std::int64_t>(trajectory.batches.size());
  out.epochs = static_cast<int>(seen / options.epoch_steps);
  const std::int64_t whole = std::int64_t{out.epochs} * options.epoch_steps - before;  // of the batches seen
  if (out.epochs == 0 || whole < 4) return out;
  const std::vector<double> history(trajectory.batches.begin(),
                                    trajectory.batches.begin() + static_cast<std::ptrdiff_t>(whole));
  BatchForecastOptions forecast = options.forecast;
  forecast.min_batch = range.min_batch;
  forecast.max_batch = range.max_batch;
  out.batches = forecast_batches(history, options.epoch_steps, forecast).ensemble;
  // Seed 004 §6.3's epoch time at an affine t(B): the mean forecast batch (epoch_batch.h).
  const double mean = std::accumulate(out.batches.begin(), out.batches.end(), 0.0) /
                      static_cast<double>(out.batches.size());
  out.batch = plannable_batch(mean, range);
  out.forecast = true;
  return out;
}

}  // namespace morph
