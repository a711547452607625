// A job's fitted performance model: its forward profile and the fitted parameters.
#pragma once

#include "libmorph/perf/forward_model.h"
#include "libmorph/perf/perf_params.h"

namespace morph {

struct PerfModel {
  ForwardModel forward;
  PerfParams params;
};

}  // namespace morph
