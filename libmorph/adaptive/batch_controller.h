// JABAS's fine-grained adaptive batching (seed 004 §6.1, after SimiGrad [63]): every p
// iterations the cosine similarity Φ of the two groups' aggregated gradients moves the
// global batch B_G up by the adaptive rate α when Φ < γ and down by α when Φ > γ, within
// [min B_G, max B_G] (--morph-adaptive-batch=MIN:MAX); the learning rate follows the
// batch by square-root scaling, as JABAS's trainer does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/request/morph_request.h"  // AdaptiveBatchRange, parse_adaptive_batch

namespace morph {

enum class LrScaling { square_root, linear };

struct BatchControllerOptions {
  double similarity_target = 0.1;  // γ (Table 4: 0.1, 0.3 for ViT)
  double adaptive_rate = 0.1;      // α (Table 4)
  int interval_iterations = 100;   // p (Table 4)
  AdaptiveBatchRange range;
  std::int64_t initial_batch = 0;  // in range
  LrScaling lr_scaling = LrScaling::square_root;

  // Ceres-style: false with a message naming the bad member.
  bool is_valid(std::string* error) const;
};

// One adaptation: the batch and learning-rate factor for the next p iterations.
struct BatchStep {
  std::int64_t iteration = 0;  // iterations done when Φ was measured
  double similarity = 0;
  std::int64_t global_batch = 0;
  double lr_scale = 1;  // against the learning rate tuned for the reference batch
};

class BatchController {
 public:
  // Throws morph::Error naming the bad option.
  explicit BatchController(const BatchControllerOptions& options);

  // Φ measured after the current p iterations, in [-1, 1]; returns the next step.
  BatchStep observe(double similarity);
  // Continues a run that stopped after `iteration` iterations at `global_batch` (a
  // checkpoint's); the next observe() is at the next multiple of p. Throws morph::Error
  // when the batch is outside the range or the iteration negative.
  void resume(std::int64_t iteration, std::int64_t global_batch);
  std::int64_t iteration() const { return iteration_; }

  std::int64_t global_batch() const { return batch_; }
  double lr_scale() const { return lr_scale_for(batch_); }
  // The scaling rule for any batch: sqrt(B / B_ref) or B / B_ref.
  double lr_scale_for(std::int64_t global_batch) const;
  // B_ref = max(initial, min B_G): the batch the base learning rate was tuned for.
  std::int64_t reference_batch() const;
  const BatchControllerOptions& options() const { return options_; }

 private:
  BatchControllerOptions options_;
  std::int64_t batch_ = 0;
  std::int64_t iteration_ = 0;
};

// The steps a controller takes over a recorded similarity trace (one value per p iterations).
std::vector<BatchStep> batch_path(const BatchControllerOptions& options, const std::vector<double>& similarities);

}  // namespace morph
