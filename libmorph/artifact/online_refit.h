// The online-refit curve on the Morphling artifact (Morphling §4): how fast a fitted model
// converges when the jobs it schedules report their iteration times. Per workload (fitted
// as morph validate fits it) and Table 2 family with enough rows that no fit has seen, the
// family's first rows in trace order (or in a random order, OnlineRefitOptions::order_seed)
// are observed one by one and, after each, the model in
// use is refitted to them and to its own points (its evidence; the saved model is the
// prior) and the refit kept or not as morphd decides (gated_refit); the error is measured
// on the family's remaining rows, which stay the same for every step.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "libmorph/artifact/validation.h"
#include "libmorph/refit/refit.h"

namespace morph {

struct OnlineRefitOptions {
  double prior_weight = kDefaultPriorWeight;
  int observed_rows = 3;  // observations per family, refitted after each
  int min_rows = 5;       // families with fewer unseen measured rows are left out
  // morphd's RefitErrorThreshold (gated_refit): after each observation the model in use is
  // refitted only where it mispredicts the rows observed so far by more, and the refit
  // kept only where it predicts them better. 0: a refit after every observation.
  double refit_threshold = 0;
  // 0: a family's rows are observed in trace order; else in the order this seed shuffles
  // them to (each workload and family from its own stream), so that how far a family's
  // error falls can be told from the order its rows happen to be in.
  std::uint64_t order_seed = 0;

  // Ceres-style: false with a message naming the bad member.
  bool is_valid(std::string* error) const;
};

struct OnlineRefitCurve {
  std::string workload;
  std::string family;
  std::vector<std::string> observed;  // exec_plan,placement of the observed rows
  int held_out = 0;
  // Index n: after n observations (0: the fitted model itself).
  std::vector<double> avg_error;  // mean |predicted - measured| / measured on the held-out rows
  std::vector<double> max_error;
  // The fitted model's predictions of the held-out rows under the one factor that suits
  // those rows best (chosen knowing them): the least error any refit reaches that only
  // moves the family's level, whatever it observes.
  double level_floor = 0;
  // The model's own reach on the held-out rows: refitted to all of them at once (no
  // prior), then level-corrected as above. No refit from some of them does better unless
  // the fit's loss (log residuals, soft-L1) and the mean relative error part ways.
  double fit_floor = 0;
};

// Whether the curve's last average error is at most half its first (issue 11's target).
bool halved(const OnlineRefitCurve& curve);

struct OnlineRefitReport {
  OnlineRefitOptions options;
  std::vector<OnlineRefitCurve> curves;
  int halved = 0;    // curves whose last average error is at most half the first
  int halvable = 0;  // curves whose level_floor is at most half their first average error
  int halvable_by_fit = 0;  // the same for fit_floor
};

// The curves of one workload taken together, as issue 11 asks the curve "shown per
// model": the mean errors over all its families' held-out rows (each family weighed by
// its rows) before and after the last observation, and how many families halved.
struct OnlineRefitModel {
  std::string workload;
  int families = 0;
  int halved = 0;
  int held_out = 0;
  double avg_error_before = 0;
  double avg_error_after = 0;
};
// In the order of `curves`, whose curves of one workload are consecutive (as
// online_refit gives them).
std::vector<OnlineRefitModel> online_refit_by_model(std::span<const OnlineRefitCurve> curves);

// min over c > 0 of mean_i |c p_i - m_i| / m_i, for predictions p and measurements m (> 0).
// The mean is convex and piecewise linear in c, so its minimum is at some c = m_i / p_i.
double level_corrected_error(std::span<const double> predicted, std::span<const double> measured);

// The curves of one workload, in the order its families first appear in the trace.
std::vector<OnlineRefitCurve> online_refit_curves(const WorkloadValidation& workload,
                                                  const OnlineRefitOptions& options);

OnlineRefitReport online_refit(const std::vector<WorkloadValidation>& workloads, const OnlineRefitOptions& options);

}  // namespace morph
