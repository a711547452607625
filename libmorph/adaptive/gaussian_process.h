// Gaussian-process regression of a series on its step index, the GPR half of JABAS's GBS
// forecaster (seed 004 §6.2, after [79]). JABAS fits ConstantKernel × ExpSineSquared
// (scikit-learn, random restarts); here the same periodic kernel, on the residuals of a
// least-squares line so that the forecast keeps the trend, plus white noise:
//   k(x, x') = s² (exp(-2 sin²(π |x - x'| / P) / ℓ²) + r δ(x, x'))
// with P, ℓ and r from a fixed grid by log marginal likelihood and s² at its closed-form
// maximum for each; deterministic, no random restarts.
#pragma once

#include <vector>

namespace morph {

struct PeriodicGpFit {
  double intercept = 0;  // the mean line a + b x
  double slope = 0;
  double period_steps = 0;  // P
  double length_scale = 0;  // ℓ
  double noise_ratio = 0;   // r
  double signal_variance = 0;  // s²
  double log_marginal_likelihood = 0;
  std::vector<double> weights;  // K⁻¹ (y - mean), for prediction
};

// Fits y[i] at x = i; at least 4 points, all finite.
PeriodicGpFit fit_periodic_gp(const std::vector<double>& y);

// The posterior mean at x = y.size() .. y.size() + steps - 1.
std::vector<double> predict_periodic_gp(const PeriodicGpFit& fit, int points, int steps);

}  // namespace morph
