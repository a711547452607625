// Fitting the parameters to measured iterations (Morphling A.3, "Continuous
// model fitting"): minimise the root mean squared logarithmic error of Eq. (1) and, where
// a measurement splits the iteration, of its parts T_cc - a T_fwd and T_oo.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_params.h"

namespace morph {

struct MeasuredPoint {
  IterationTerms terms;
  double iter_ms = 0;           // measured T_iter (required)
  double backward_sync_ms = 0;  // measured T_cc - a T_fwd; 0 when not measured
  double optimizer_ms = 0;      // measured T_oo; 0 when not measured
  std::string label;            // for reports
};

// The prior weight of every fit that adds measured runs to what a model was fitted on:
// trace rows beside a profile (morph validate, morph fit --extra) and the iterations jobs
// report (online refits); one value for all models, chosen on the artifact
// (docs/validation.md, "Online refit").
constexpr double kDefaultPriorWeight = 0.3;

struct FitOptions {
  // Solver iterations of the best start in all; every start runs the first 50 of them
  // and only the best goes on.
  int max_iterations = 200;
  // Besides the start point, restart from these many points with other overlap
  // exponents and keep the best.
  int extra_starts = 3;
  // Online refit (Morphling §4): weight of a log-normal prior that keeps every parameter
  // near `start`, so that a few observed iterations move the model only as far as they
  // must. One unit weighs like one point's log residual per e-fold of a parameter.
  // 0: no prior (fitting from a profile).
  double prior_weight = 0;
  // Where the prior is centred; none: at `start`.
  std::optional<PerfParams> prior_centre = std::nullopt;
};

struct FitResult {
  PerfParams params;
  double rmsle = 0;              // over all residuals
  std::vector<double> rel_errors;  // (predicted - measured) / measured T_iter, per point
  std::vector<bool> fitted;        // per parameter: informed by the data (else held at start)
  std::size_t residuals = 0;       // the points' log residuals (1 to 3 a point), the prior's not counted
  bool converged = false;
};

// With a prior every parameter but k_odd is informed by it and none is held. Parameters
// that no point informs (no offloading point for k_opt_off, k_off, k_swap; no
// DP communication for k_sync; no odd placement beside an even one across nodes for
// k_odd; ...) are held at the start values. `start` is the warm
// start for online refits (default: PerfParams{}). Throws when `points` is empty or holds
// a non-positive measurement.
FitResult fit_perf_params(std::span<const MeasuredPoint> points, const FitOptions& options = {},
                          const PerfParams& start = {});

}  // namespace morph
