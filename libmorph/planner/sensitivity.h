// Resource-sensitivity curves (Morphling §5, Fig. 6): the best plan and its throughput
// for each amount of one resource, the others fixed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/cluster/cluster.h"
#include "libmorph/planner/plan_search.h"

namespace morph {

struct CurvePoint {
  int gpus = 0;
  std::int64_t cpus = 0;
  std::string allocation;  // e.g. "2x8xa100+1x4xa100"
  bool feasible = false;
  PlanOption best;         // meaningful when feasible
  double throughput = 0;   // of the best plan at exactly this amount, 0 when none
  double envelope = 0;     // best throughput at this amount or less: the curve stays flat
                           // over counts no plan can use
};

// `gpus` GPUs of node type `node`, packed into the fewest nodes (full nodes first).
Allocation packed_allocation(const Cluster& cluster, const NodeType& node, int gpus, int cpus_per_gpu);

// GPU curve: 1..max_gpus GPUs of node type `node`.
std::vector<CurvePoint> gpu_curve(const Workload& workload, const Cluster& cluster, const NodeType& node,
                                  int max_gpus, const PerfModel& perf, const PlanSearchOptions& options);

// CPU curve: `gpus` GPUs of `node` with 1..max_cpus_per_gpu CPUs for each.
std::vector<CurvePoint> cpu_curve(const Workload& workload, const Cluster& cluster, const NodeType& node,
                                  int gpus, int max_cpus_per_gpu, const PerfModel& perf,
                                  const PlanSearchOptions& options);

}  // namespace morph
