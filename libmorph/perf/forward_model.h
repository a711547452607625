// T_fwd as a function of the work on one GPU (Morphling A.1: profiled on one node and
// scaled linearly to the per-GPU batch and tensor shard).
#pragma once

#include <cstdint>
#include <span>

#include "libmorph/cluster/gpu_type.h"
#include "libmorph/model/model_spec.h"

namespace morph {

struct ForwardModel {
  double intercept_ms = 0;       // per iteration, independent of the batch
  double per_sample_ms = 0;      // one sample through the whole model
  double reference_speed = 1.0;  // GpuType::speed of the GPU the profile ran on
  std::int64_t seq_len = 0;      // the sequence length its samples had (0: not recorded)

  // Forward time of one iteration that pushes `samples` whole-model samples through the
  // critical path of one GPU of relative speed `gpu_speed`.
  double forward_ms(double samples, double gpu_speed) const {
    return (intercept_ms + per_sample_ms * samples) * reference_speed / gpu_speed;
  }
  // The same model for samples of `seq` tokens: the time per sample scaled by the forward
  // FLOPs per sample at `seq` over those at seq_len (A.1's linear scaling, by work); as it
  // is when seq_len was not recorded or is `seq`.
  ForwardModel at_sequence(const ModelSpec& model, std::int64_t seq) const;
};

struct ForwardSample {
  double samples = 0;     // whole-model samples per GPU per iteration
  double forward_ms = 0;  // measured forward time of the iteration
};

// Affine least squares in log space with a soft-L1 loss, so that one corrupt profile
// value (the artifact's t5 has a forward time of 4 ms among 54-80 ms) does not bend
// the line. One sample gives a line through the origin. Throws on no samples.
ForwardModel fit_forward_model(std::span<const ForwardSample> samples, double reference_speed);

// Without a profile: forward FLOPs at `efficiency` of the GPU's peak.
ForwardModel estimate_forward_model(const ModelSpec& model, std::int64_t seq_len, const GpuType& gpu,
                                    double efficiency);

}  // namespace morph
