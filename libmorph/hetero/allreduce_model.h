// All-reduce time of the gradient buckets: JABAS (seed 004) Eq. (3)-(4), with the linear
// fit of measured against ideal times that JABAS's profiler data feeds.
#pragma once

#include <algorithm>
#include <vector>

#include "libmorph/hetero/jabas_profile.h"

namespace morph {

// Eq. (3): t_allreduce = alpha_comm * ideal + beta_comm (least squares on the samples),
// never below 0 ms (a negative intercept would make small buckets take negative time).
struct AllreduceFit {
  double alpha = 1;
  double beta_ms = 0;
  double predict_ms(double ideal_ms) const { return std::max(0.0, alpha * ideal_ms + beta_ms); }
};

// Throws morph::Error naming the samples' file when no line fits them, or when the
// fitted times fall as the ideal ones rise (alpha <= 0).
AllreduceFit fit_allreduce(const AllreduceSamples& samples);

// The ideal ring all-reduce of `bytes` among `gpus` at `bandwidth`: d * 4(N_G - 1)/N_G / K.
double ideal_allreduce_ms(double bytes, int gpus, double bandwidth_bytes_per_s);

// Eq. (4)'s buckets, split (Morph's reading; Eq. (6) overlaps all of t_comm): b_1..b_{l-1}
// run under the backward pass, the last one b_l after it, whose gradients are ready only
// when it ends (the b_l that §5.1 also keeps out of OWS's overlap, Eq. (5)'s tau).
struct BucketAllreduce {
  double overlapped_ms = 0;  // sum over b_1 .. b_{l-1}
  double last_ms = 0;        // b_l
};

// The buckets on `gpus` GPUs of `servers` servers: the intra-node fit and bandwidth on one
// server, the inter-node ones across servers.
BucketAllreduce bucket_allreduce(const JabasProfile& profile, const JabasServer& server, int gpus, int servers);

// How the weight update meets the all-reduce (IIDP §4): overlapped (OWS) unless the buckets
// but the last average more than 1.5 times DDP's 25 MiB bucket, then sequential (SWS).
enum class WeightSync { overlap, sequential };
WeightSync choose_weight_sync(const std::vector<double>& bucket_mib);
const char* to_string(WeightSync w);

// Eq. (5)'s tau: 1 for SWS, b_l / W for OWS.
double update_share(const std::vector<double>& bucket_mib, WeightSync sync);

}  // namespace morph
