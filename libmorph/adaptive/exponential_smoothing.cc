#include "libmorph/adaptive/exponential_smoothing.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

namespace {

constexpr double kLevelRates[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
constexpr double kTrendRates[] = {0.02, 0.05, 0.1, 0.2, 0.3, 0.5};

HoltFit run_holt(const std::vector<double>& y, double a, double beta) {
  HoltFit fit{a, beta, y[1], y[1] - y[0], 0};
  for (std::size_t t = 2; t < y.size(); ++t) {
    const double forecast = fit.level + fit.trend;
    fit.one_step_sse += (y[t] - forecast) * (y[t] - forecast);
    // Holt [18]: ℓ_t = a y_t + (1 - a)(ℓ_{t-1} + b_{t-1}); b_t = β (ℓ_t - ℓ_{t-1}) + (1 - β) b_{t-1}
    const double level = a * y[t] + (1 - a) * forecast;
    fit.trend = beta * (level - fit.level) + (1 - beta) * fit.trend;
    fit.level = level;
  }
  return fit;
}

}  // namespace

HoltFit fit_holt(const std::vector<double>& y) {
  if (y.size() < 3) throw Error(fmt::format("exponential smoothing: {} points, at least 3 needed", y.size()));
  for (double v : y)
    if (!std::isfinite(v)) throw Error(fmt::format("exponential smoothing: non-finite value {}", v));
  HoltFit best;
  best.one_step_sse = std::numeric_limits<double>::infinity();
  for (double a : kLevelRates)
    for (double beta : kTrendRates)
      if (HoltFit fit = run_holt(y, a, beta); fit.one_step_sse < best.one_step_sse) best = fit;
  if (!std::isfinite(best.one_step_sse))  // values near 1e300: every fit's error overflows
    throw Error(fmt::format("exponential smoothing: no smoothing rate fits the {} points in floating point", y.size()));
  return best;
}

std::vector<double> predict_holt(const HoltFit& fit, int steps) {
  std::vector<double> out;
  for (int h = 1; h <= steps; ++h) out.push_back(fit.level + h * fit.trend);
  return out;
}

}  // namespace morph
