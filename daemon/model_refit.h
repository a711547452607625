// Online refit (Morphling §4, "Continuous model fitting": the model is "updated online
// using metrics collected in real training runs when the prediction error exceeds a
// threshold"). Each round, per model, the iteration times its running jobs measured
// (job_measurements.h) against what the model in use predicts for them; above morph.conf
// RefitErrorThreshold, a warm-start refit (libmorph/refit/refit.h) on those points and the
// points the model was fitted on (its PerfModelDir file's evidence), which morphd keeps in
// the state database and the policy uses from then on.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/view_builder.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/perf/perf_model.h"
#include "libmorph/refit/refit.h"

namespace morph::daemon {

struct RefitOptions {
  double error_threshold = PolicyKnobs{}.refit_error_threshold;  // RefitErrorThreshold; 0: never refit
  double prior_weight = kDefaultPriorWeight;  // FitOptions::prior_weight around the model in use

  // Ceres-style: false with a message naming the bad member.
  bool is_valid(std::string* error) const;
};

struct ModelRefit {
  std::string model;                       // catalog name
  PerfModel perf;                          // the refitted model (forward: one application's)
  std::set<std::string> configurations;    // the points: application, plan and allocation
  double error_before = 0;                 // mean |predicted - measured| / measured over the points
  double error_after = 0;
  double rmsle = 0;                        // of the fit
  bool accepted = false;                   // the refit predicts the points better than the model in use
};

// The refits this round calls for. A point is one configuration (application, plan,
// allocation) that running jobs measured (BuiltView::measured; several jobs: the median
// of theirs). A model is refit when its points' mean error exceeds the threshold and
// they include a configuration its last refit (`refit_on`, by model) did not see: the
// same evidence twice would pull the model past its prior. Throws on invalid options.
std::vector<ModelRefit> refit_models(const BuiltView& built, const RefitOptions& options,
                                     const std::map<std::string, std::set<std::string>>& refit_on);

// "refit MODEL: error X% -> Y% on N points" (and that it was kept when not accepted).
std::string describe(const ModelRefit& refit);

}  // namespace morph::daemon
