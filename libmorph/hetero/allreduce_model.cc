#include "libmorph/hetero/allreduce_model.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kDdpBucketMiB = 25;         // PyTorch DDP's default bucket_cap_mb
constexpr double kSequentialBucketRatio = 1.5;  // IIDP's WEIGHT_SYNC_METHOD_SELECTION_THRESHOLD

}  // namespace

AllreduceFit fit_allreduce(const AllreduceSamples& s) {
  const double n = static_cast<double>(s.ideal_ms.size());
  const double mx = std::accumulate(s.ideal_ms.begin(), s.ideal_ms.end(), 0.0) / n;
  const double my = std::accumulate(s.measured_ms.begin(), s.measured_ms.end(), 0.0) / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < s.ideal_ms.size(); ++i) {
    sxx += (s.ideal_ms[i] - mx) * (s.ideal_ms[i] - mx);
    sxy += (s.ideal_ms[i] - mx) * (s.measured_ms[i] - my);
  }
  if (sxx <= 0) throw Error(fmt::format("{}: all ideal_ms values are equal, no line fits", s.path));
  AllreduceFit f;
  f.alpha = sxy / sxx;
  f.beta_ms = my - f.alpha * mx;
  if (!(f.alpha > 0) || !std::isfinite(f.alpha) || !std::isfinite(f.beta_ms))
    throw Error(fmt::format("{}: measured all-reduce times do not rise with the ideal ones (Eq. 3 fit: {:.4g} ms per "
                            "ideal ms, {:.4g} ms)",
                            s.path, f.alpha, f.beta_ms));
  return f;
}

double ideal_allreduce_ms(double bytes, int gpus, double bandwidth_bytes_per_s) {
  // JABAS Eq. (3): (d * 4(N_G - 1)/N_G) / K
  return bytes * 4.0 * (gpus - 1) / gpus / bandwidth_bytes_per_s * 1e3;
}

BucketAllreduce bucket_allreduce(const JabasProfile& profile, const JabasServer& server, int gpus, int servers) {
  const bool across = servers > 1;
  const AllreduceFit fit = fit_allreduce(across ? profile.inter : profile.intra);
  const double bandwidth = across ? server.inter_bandwidth_bytes_per_s : server.intra_bandwidth_bytes_per_s;
  BucketAllreduce out;
  const std::size_t l = profile.bucket_mib.size();
  for (std::size_t i = 0; i < l; ++i) {
    // JABAS Eq. (4): t_comm = sum_i t_allreduce(b_i)
    const double t = fit.predict_ms(ideal_allreduce_ms(profile.bucket_mib[i] * kMiB, gpus, bandwidth));
    (i + 1 < l ? out.overlapped_ms : out.last_ms) += t;
  }
  return out;
}

WeightSync choose_weight_sync(const std::vector<double>& bucket_mib) {
  if (bucket_mib.size() < 2) return WeightSync::overlap;
  const double mean = std::accumulate(bucket_mib.begin(), bucket_mib.end() - 1, 0.0) /
                      static_cast<double>(bucket_mib.size() - 1);
  return mean / kDdpBucketMiB > kSequentialBucketRatio ? WeightSync::sequential : WeightSync::overlap;
}

const char* to_string(WeightSync w) { return w == WeightSync::overlap ? "overlap" : "sequential"; }

double update_share(const std::vector<double>& bucket_mib, WeightSync sync) {
  if (sync == WeightSync::sequential) return 1;
  // JABAS Eq. (5): tau ~= b_l / W under OWS
  return bucket_mib.back() / std::accumulate(bucket_mib.begin(), bucket_mib.end(), 0.0);
}

}  // namespace morph
