#include "libmorph/perf/forward_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <ceres/ceres.h>
#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

struct LogForwardResidual {
  double samples;
  double forward_ms;
  template <typename T>
  bool operator()(const T* intercept, const T* per_sample, T* residual) const {
    residual[0] = log((intercept[0] + per_sample[0] * samples) / forward_ms);
    return true;
  }
};

}  // namespace

ForwardModel fit_forward_model(std::span<const ForwardSample> samples, double reference_speed) {
  std::vector<ForwardSample> usable;
  for (const ForwardSample& s : samples)
    if (s.samples > 0 && s.forward_ms > 0) usable.push_back(s);
  if (usable.empty()) throw Error("forward model: no profiled forward times to fit");
  ForwardModel model;
  model.reference_speed = reference_speed;
  std::vector<double> per_sample;
  for (const ForwardSample& s : usable) per_sample.push_back(s.forward_ms / s.samples);
  std::nth_element(per_sample.begin(), per_sample.begin() + per_sample.size() / 2, per_sample.end());
  model.per_sample_ms = per_sample[per_sample.size() / 2];
  if (usable.size() == 1) return model;

  double intercept = 0, slope = model.per_sample_ms;
  ceres::Problem problem;
  for (const ForwardSample& s : usable)
    problem.AddResidualBlock(new ceres::AutoDiffCostFunction<LogForwardResidual, 1, 1, 1>(
                                 new LogForwardResidual{s.samples, s.forward_ms}),
                             new ceres::SoftLOneLoss(0.1), &intercept, &slope);
  problem.SetParameterLowerBound(&intercept, 0, 0.0);
  problem.SetParameterLowerBound(&slope, 0, 1e-12);
  ceres::Solver::Options options;
  options.max_num_iterations = 100;
  options.logging_type = ceres::SILENT;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  if (summary.IsSolutionUsable() && std::isfinite(intercept) && std::isfinite(slope)) {
    model.intercept_ms = intercept;
    model.per_sample_ms = slope;
  }
  return model;
}

ForwardModel ForwardModel::at_sequence(const ModelSpec& model, std::int64_t seq) const {
  ForwardModel f = *this;
  if (seq_len <= 0 || seq <= 0 || seq == seq_len) return f;
  f.per_sample_ms *= forward_flops_per_sample(model, seq) / forward_flops_per_sample(model, seq_len);
  f.seq_len = seq;
  return f;
}

ForwardModel estimate_forward_model(const ModelSpec& model, std::int64_t seq_len, const GpuType& gpu,
                                    double efficiency) {
  if (!(gpu.peak_tflops > 0) || !(efficiency > 0))
    throw Error(fmt::format("GPU type {}: no PeakTflops to estimate the forward time from", gpu.name));
  ForwardModel f;
  f.reference_speed = gpu.speed;
  f.per_sample_ms = forward_flops_per_sample(model, seq_len) / (gpu.peak_tflops * 1e12 * efficiency) * 1e3;
  f.seq_len = seq_len;
  return f;
}

}  // namespace morph
