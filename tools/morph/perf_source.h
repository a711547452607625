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

ResolvedPerf resolve_perf(Context& context, const std::string& perf_file, const Workload& workload,
                          const GpuType& reference_gpu);

}  // namespace morph::cli
