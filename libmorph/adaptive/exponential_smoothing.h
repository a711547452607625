// Holt's linear-trend exponential smoothing [18], the ESM half of JABAS's GBS forecaster
// (seed 004 §6.2). JABAS calls statsmodels' ExponentialSmoothing without a trend (a flat
// forecast); Morph smooths the log of the batch with a trend, so that the exponential
// growth §6.2 describes is a straight line it can carry forward. The two rates come from a
// fixed grid by the one-step-ahead squared error; deterministic.
#pragma once

#include <vector>

namespace morph {

struct HoltFit {
  double level_rate = 0;  // a
  double trend_rate = 0;  // β
  double level = 0;       // ℓ_n after the last point
  double trend = 0;       // b_n
  double one_step_sse = 0;
};

// At least 3 points, all finite.
HoltFit fit_holt(const std::vector<double>& y);

// ℓ_n + h b_n for h = 1 .. steps.
std::vector<double> predict_holt(const HoltFit& fit, int steps);

}  // namespace morph
