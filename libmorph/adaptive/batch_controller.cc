#include "libmorph/adaptive/batch_controller.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

bool BatchControllerOptions::is_valid(std::string* error) const {
  if (!(similarity_target >= -1 && similarity_target <= 1)) {
    *error = fmt::format("similarity target {} must lie in [-1, 1] (a cosine similarity)", similarity_target);
    return false;
  }
  if (!(adaptive_rate > 0 && adaptive_rate < 1)) {
    *error = fmt::format("adaptive rate {} must lie in (0, 1)", adaptive_rate);
    return false;
  }
  if (interval_iterations < 1) {
    *error = fmt::format("adaptive interval {} must be >= 1 iteration", interval_iterations);
    return false;
  }
  if (range.min_batch < 1 || range.max_batch < 1) {
    *error = fmt::format("batch range {}:{} must be positive", range.min_batch, range.max_batch);
    return false;
  }
  if (range.min_batch > range.max_batch) {
    *error = fmt::format("batch range MIN {} exceeds MAX {}", range.min_batch, range.max_batch);
    return false;
  }
  if (initial_batch < range.min_batch || initial_batch > range.max_batch) {
    *error = fmt::format("initial batch {} lies outside the batch range {}:{}", initial_batch, range.min_batch,
                         range.max_batch);
    return false;
  }
  return true;
}

BatchController::BatchController(const BatchControllerOptions& options) : options_(options) {
  if (std::string error; !options.is_valid(&error)) throw Error("adaptive batching: " + error);
  batch_ = options.initial_batch;
}

std::int64_t BatchController::reference_batch() const {
  return std::max(options_.initial_batch, options_.range.min_batch);
}

double BatchController::lr_scale_for(std::int64_t global_batch) const {
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(reference_batch());
  // JABAS trainer _scale_lr: lr' = lr * sqrt(B'_G / B_ref) (square-root scaling, [37])
  return options_.lr_scaling == LrScaling::square_root ? std::sqrt(ratio) : ratio;
}

BatchStep BatchController::observe(double similarity) {
  if (!std::isfinite(similarity) || similarity < -1 || similarity > 1)
    throw Error(fmt::format("adaptive batching: gradient similarity {} at iteration {} must lie in [-1, 1]", similarity,
                            iteration_ + options_.interval_iterations));
  iteration_ += options_.interval_iterations;
  const double b = static_cast<double>(batch_);
  const double alpha = options_.adaptive_rate;
  // Seed 004 §6.1: Φ < γ: B'_G = (1 + α) B_G; Φ > γ: B'_G = (1 - α) B_G; rounded to the
  // nearest sample, at least one from B_G so that a small batch still moves, then clamped
  // to [min B_G, max B_G].
  double next = b;
  if (similarity < options_.similarity_target) next = std::max(std::round(b * (1 + alpha)), b + 1);
  else if (similarity > options_.similarity_target) next = std::min(std::round(b * (1 - alpha)), b - 1);
  next = std::clamp(next, static_cast<double>(options_.range.min_batch), static_cast<double>(options_.range.max_batch));
  batch_ = static_cast<std::int64_t>(next);
  return BatchStep{iteration_, similarity, batch_, lr_scale()};
}

void BatchController::resume(std::int64_t iteration, std::int64_t global_batch) {
  if (iteration < 0) throw Error(fmt::format("adaptive batching: cannot resume at iteration {}", iteration));
  if (global_batch < options_.range.min_batch || global_batch > options_.range.max_batch)
    throw Error(fmt::format("adaptive batching: cannot resume at batch {}, outside {}:{}", global_batch,
                            options_.range.min_batch, options_.range.max_batch));
  // On the grid of p: a run resumed between adaptation steps observes again at the next
  // multiple of p, as it would have run on. Counted from the resume, every later change
  // fell off the grid, and morphd read the interval as their gcd (50 for p = 100 after a
  // resume at 150: every batch counted twice, epochs of half their length).
  iteration_ = iteration - iteration % options_.interval_iterations;
  batch_ = global_batch;
}

std::vector<BatchStep> batch_path(const BatchControllerOptions& options, const std::vector<double>& similarities) {
  BatchController controller(options);
  std::vector<BatchStep> steps;
  steps.reserve(similarities.size());
  for (double phi : similarities) steps.push_back(controller.observe(phi));
  return steps;
}

}  // namespace morph
