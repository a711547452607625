#include "libmorph/adaptive/gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

namespace {

constexpr int kMaxPeriodSteps = 48;
constexpr double kLengthScales[] = {0.5, 1.0, 2.0};
constexpr double kNoiseRatios[] = {1e-3, 1e-2, 1e-1, 1.0};

double periodic(double dx, double period, double length) {
  const double s = std::sin(std::numbers::pi * std::abs(dx) / period);
  return std::exp(-2 * s * s / (length * length));
}

}  // namespace

PeriodicGpFit fit_periodic_gp(const std::vector<double>& y) {
  const int n = static_cast<int>(y.size());
  if (n < 4) throw Error(fmt::format("gaussian process: {} points, at least 4 needed", n));
  for (double v : y)
    if (!std::isfinite(v)) throw Error(fmt::format("gaussian process: non-finite value {}", v));

  PeriodicGpFit best;
  // The mean line by least squares on x = 0 .. n-1.
  const double x_mean = (n - 1) / 2.0;
  double y_mean = 0;
  for (double v : y) y_mean += v / n;
  double sxy = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    sxy += (i - x_mean) * (y[static_cast<std::size_t>(i)] - y_mean);
    sxx += (i - x_mean) * (i - x_mean);
  }
  best.slope = sxy / sxx;
  best.intercept = y_mean - best.slope * x_mean;
  Eigen::VectorXd r(n);
  for (int i = 0; i < n; ++i) r(i) = y[static_cast<std::size_t>(i)] - best.intercept - best.slope * i;

  best.log_marginal_likelihood = -std::numeric_limits<double>::infinity();
  Eigen::MatrixXd k(n, n);
  for (int period = 2; period <= std::min(kMaxPeriodSteps, n / 2); ++period)
    for (double length : kLengthScales)
      for (double noise : kNoiseRatios) {
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) k(i, j) = periodic(i - j, period, length) + (i == j ? noise : 0);
        const Eigen::LLT<Eigen::MatrixXd> llt(k);
        if (llt.info() != Eigen::Success) continue;
        const Eigen::VectorXd alpha = llt.solve(r);
        // s² = rᵀ K̃⁻¹ r / n maximises the likelihood of K = s² K̃; with it
        // log p(r) = -n/2 log s² - log|L| - n/2 (1 + log 2π)  (Rasmussen & Williams Eq. 2.30)
        const double s2 = std::max(r.dot(alpha) / n, 1e-300);
        const double log_det_half = llt.matrixLLT().diagonal().array().log().sum();
        const double lml = -0.5 * n * std::log(s2) - log_det_half - 0.5 * n * (1 + std::log(2 * std::numbers::pi));
        if (!(lml > best.log_marginal_likelihood)) continue;  // a NaN (values near 1e300) is no fit
        best.log_marginal_likelihood = lml;
        best.period_steps = period;
        best.length_scale = length;
        best.noise_ratio = noise;
        best.signal_variance = s2;
        best.weights.assign(alpha.data(), alpha.data() + n);
      }
  if (best.weights.empty()) throw Error(fmt::format("gaussian process: no kernel on the grid fits the {} points", n));
  return best;
}

std::vector<double> predict_periodic_gp(const PeriodicGpFit& fit, int points, int steps) {
  if (points != static_cast<int>(fit.weights.size()))
    throw Error(fmt::format("gaussian process: fitted to {} points, asked about {}", fit.weights.size(), points));
  std::vector<double> out;
  for (int t = points; t < points + steps; ++t) {
    // Posterior mean: m(x*) + k̃(x*, X) K̃⁻¹ r (s² cancels; no noise off the diagonal)
    double v = fit.intercept + fit.slope * t;
    for (int i = 0; i < points; ++i)
      v += periodic(t - i, fit.period_steps, fit.length_scale) * fit.weights[static_cast<std::size_t>(i)];
    out.push_back(v);
  }
  return out;
}

}  // namespace morph
