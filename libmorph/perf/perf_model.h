// A job's fitted performance model: its forward profile, the fitted parameters and the
// measurements they were fitted on.
#pragma once

#include <memory>
#include <vector>

#include "libmorph/perf/fit.h"
#include "libmorph/perf/forward_model.h"
#include "libmorph/perf/perf_params.h"

namespace morph {

using FitEvidence = std::vector<MeasuredPoint>;

// The prior a fit carried beside its points (FitOptions::prior_weight around `centre`);
// weight 0 for a fit without one, as a profile's.
struct FitPrior {
  PerfParams centre;
  double weight = 0;
};

struct PerfModel {
  ForwardModel forward;
  PerfParams params;
  // The points `params` were fitted on (profile runs and any trace rows), null for an
  // estimate. An online refit fits them again beside what jobs report (Morphling §4),
  // so that three observations cannot move what the profile settled; shared because
  // every application of a model holds the same.
  std::shared_ptr<const FitEvidence> evidence = nullptr;
  // The prior `params` were fitted with beside the evidence: a refit solves that fit
  // again with the observations added (libmorph/refit/refit.h).
  FitPrior prior = {};
};

}  // namespace morph
