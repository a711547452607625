// Where a subcommand's performance model comes from: a saved fit (--perf FILE) or,
// without one, a FLOP estimate of the forward pass and default parameters.
#pragma once

#include <string>

#include "libmorph/cluster/allocation.h"
#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_model.h"
#include "tools/morph/context.h"

namespace morph::cli {

struct ResolvedPerf {
  PerfModel perf;
  std::string description;  // one line for the report
};

// Without --perf, the forward pass is estimated at `compute_efficiency` of the GPU's peak.
ResolvedPerf resolve_perf(const std::string& perf_file, const Workload& workload, const GpuType& reference_gpu,
                          double compute_efficiency, const Catalog& catalog);

}  // namespace morph::cli
