// JABAS's GBS forecaster (seed 004 §6.2) on synthetic trajectories shaped like Figure 9:
// exponential growth with periodic dips and seeded noise; the last epoch is held out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "libmorph/adaptive/batch_forecaster.h"
#include "libmorph/adaptive/exponential_smoothing.h"
#include "libmorph/adaptive/gaussian_process.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

struct Trajectory {
  double start = 128;
  double growth = 0.04;    // ln B per step
  int dip_period = 10;     // steps between dips
  int dip_steps = 2;
  double dip = 0.35;       // ln B drop during a dip
  double noise = 0.02;     // σ of ln B
  std::uint64_t seed = 1;
};

std::vector<double> trajectory(const Trajectory& t, int steps) {
  std::mt19937_64 rng(t.seed);
  std::normal_distribution<double> noise(0, t.noise);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    const double dip = i % t.dip_period < t.dip_steps ? t.dip : 0;
    out.push_back(std::round(t.start * std::exp(t.growth * i - dip + noise(rng))));
  }
  return out;
}

double mean_abs_pct_error(const std::vector<double>& predicted, const std::vector<double>& actual) {
  double sum = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) sum += std::abs(predicted[i] - actual[i]) / actual[i];
  return sum / static_cast<double>(actual.size());
}

struct Errors {
  double ensemble, gp, smoothing, last_value, line;
};

// History: the first `seen` steps; held out: the next `ahead` (one epoch).
Errors held_out_errors(const Trajectory& t, int seen, int ahead) {
  const std::vector<double> all = trajectory(t, seen + ahead);
  const std::vector<double> history(all.begin(), all.begin() + seen);
  const std::vector<double> tail(all.begin() + seen, all.end());
  const BatchForecast f = forecast_batches(history, ahead, BatchForecastOptions{});
  // Naive baselines: the last batch for the whole epoch (JABAS without the forecast,
  // Figure 13(b)) and a least-squares line in ln B carried forward.
  const std::vector<double> last(static_cast<std::size_t>(ahead), history.back());
  std::vector<double> line;
  for (int h = 0; h < ahead; ++h) line.push_back(std::exp(f.gp_fit.intercept + f.gp_fit.slope * (seen + h)));
  // The GP sees the whole history here (seen <= gp_history_steps), so its line is the line.
  return {mean_abs_pct_error(f.ensemble, tail), mean_abs_pct_error(f.gp, tail), mean_abs_pct_error(f.smoothing, tail),
          mean_abs_pct_error(last, tail), mean_abs_pct_error(line, tail)};
}

TEST(ForecastBatch, BeatsNaiveBaselinesOnHeldOutEpoch) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    Trajectory t;
    t.seed = seed;
    const Errors e = held_out_errors(t, 50, 10);
    std::cout << "seed " << seed << ": held-out MAPE ensemble " << e.ensemble << ", GP " << e.gp << ", Holt "
              << e.smoothing << ", last value " << e.last_value << ", line " << e.line << "\n";
    // The averaged ensemble beats carrying the last batch and smoothing alone, within the
    // paper's 15.8% average (Figure 14); the GP alone also beats the line. Holt's trend
    // follows the dips, so the equal average is worse than the GP alone here (docs/hetero.md).
    EXPECT_LT(e.ensemble, e.last_value) << "seed " << seed;
    EXPECT_LT(e.ensemble, e.smoothing) << "seed " << seed;
    EXPECT_LT(e.ensemble, 0.16) << "seed " << seed;
    EXPECT_LT(e.gp, e.line) << "seed " << seed;
    EXPECT_LT(e.gp, 0.07) << "seed " << seed;
  }
}

TEST(ForecastBatch, GpFindsThePeriodOfTheDips) {
  Trajectory t;
  t.dip_period = 7;
  const BatchForecast f = forecast_batches(trajectory(t, 42), 7, BatchForecastOptions{});
  EXPECT_EQ(f.gp_fit.period_steps, 7);
  EXPECT_NEAR(f.gp_fit.slope, t.growth, 0.01);
  EXPECT_NEAR(f.holt_fit.trend, t.growth, 0.03);
}

TEST(ForecastBatch, SameSeedSameForecast) {
  Trajectory t;
  t.seed = 42;
  const BatchForecast a = forecast_batches(trajectory(t, 40), 10, BatchForecastOptions{});
  const BatchForecast b = forecast_batches(trajectory(t, 40), 10, BatchForecastOptions{});
  EXPECT_EQ(a.ensemble, b.ensemble);
  t.seed = 43;
  const BatchForecast c = forecast_batches(trajectory(t, 40), 10, BatchForecastOptions{});
  EXPECT_NE(a.ensemble, c.ensemble);
}

TEST(ForecastBatch, EnsembleIsTheWeightedMeanAndClamps) {
  Trajectory t;
  BatchForecastOptions o;
  o.gp_weight = 0.25;
  o.max_batch = 1000;
  const BatchForecast f = forecast_batches(trajectory(t, 60), 20, o);
  ASSERT_EQ(f.ensemble.size(), 20u);
  for (std::size_t h = 0; h < f.ensemble.size(); ++h) {
    EXPECT_DOUBLE_EQ(f.ensemble[h], 0.25 * f.gp[h] + 0.75 * f.smoothing[h]);
    EXPECT_LE(f.ensemble[h], 1000);
  }
  EXPECT_EQ(f.ensemble.back(), 1000);  // 128 · e^(0.04 · 79) ≈ 3000 without the bound
}

TEST(ForecastBatch, LongHistoryUsesTheLatestWindow) {
  Trajectory t;
  BatchForecastOptions o;
  o.gp_history_steps = 30;
  const BatchForecast f = forecast_batches(trajectory(t, 200), 5, o);
  EXPECT_EQ(f.gp_fit.weights.size(), 30u);
  EXPECT_EQ(f.gp.size(), 5u);
}

TEST(ForecastBatch, RejectsBadInput) {
  const BatchForecastOptions o;
  EXPECT_THROW(forecast_batches({128, 140, 150}, 5, o), Error);
  EXPECT_THROW(forecast_batches({128, 140, 150, 160}, 0, o), Error);
  EXPECT_THROW(forecast_batches({128, 140, 0, 160}, 5, o), Error);
  EXPECT_THROW(forecast_batches({128, 140, std::numeric_limits<double>::infinity(), 160}, 5, o), Error);
  BatchForecastOptions bad;
  bad.gp_weight = 1.5;
  std::string error;
  EXPECT_FALSE(bad.is_valid(&error));
  EXPECT_NE(error.find("GP weight 1.5"), std::string::npos);
  bad = BatchForecastOptions{};
  bad.min_batch = 512;
  bad.max_batch = 256;
  EXPECT_FALSE(bad.is_valid(&error));
  EXPECT_NE(error.find("512:256"), std::string::npos);
  EXPECT_THROW(forecast_batches({128, 140, 150, 160}, 5, bad), Error);
  bad = BatchForecastOptions{};
  bad.gp_history_steps = 3;
  EXPECT_THROW(forecast_batches({128, 140, 150, 160}, 5, bad), Error);
}

// Review of the adaptive code: values near 1e300 overflow every fit's error; the GP took
// a NaN likelihood for the best (the last kernel of the grid won, its variance infinite)
// and Holt's smoothing returned level 0 and trend 0. Both are errors now.
TEST(ForecastBatch, FitsThatOverflowAreErrors) {
  const std::vector<double> huge{1e300, -1e300, 1e300, -1e300, 1e300, -1e300, 1e300, -1e300};
  EXPECT_THROW(fit_periodic_gp(huge), Error);
  EXPECT_THROW(fit_holt(huge), Error);
  EXPECT_NO_THROW(fit_holt({1, 2, 3, 4}));
}

}  // namespace
}  // namespace morph
