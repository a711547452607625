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

struct PerfModel {
  ForwardModel forward;
  PerfParams params;
  // The points `params` were fitted on (profile runs and any trace rows), null for an
  // estimate. An online refit fits them again beside what jobs report (Morphling §4),
  // so that three observations cannot move what the profile settled; shared because
  // every application of a model holds the same.
  std::shared_ptr<const FitEvidence> evidence = nullptr;
};

}  // namespace morph
