// The best heterogeneous data-parallel plan (JABAS, seed 004 §4) of a workload on nodes of
// several GPU types, priced by Morph's own model: every worker runs the same local batch
// b (the plan's mbs), a GPU of type k accumulates a_k micro-batches, and
// sum_k G_k a_k b = B over the G_k GPUs of each type.
//
// Group k's time is that of the plan in which every GPU of the allocation were of type k
// and took a_k steps of b: its compute, and the synchronisation over all the job's GPUs
// and nodes (Morphling A.1 with d = every GPU). The iteration is the slowest group's, as
// JABAS's Eq. (6) takes the slowest worker. One worker per GPU: JABAS's concurrent
// workers pay off with GPU kernels too small to fill a GPU, which Morph's model does not
// describe.
#pragma once

#include <string>
#include <vector>

#include "libmorph/cluster/allocation.h"
#include "libmorph/perf/perf_model.h"
#include "libmorph/planner/plan_search.h"
#include "libmorph/record/gpu_groups.h"

namespace morph {

struct HeteroPlan {
  bool feasible = false;
  std::string reason;     // why not, when infeasible
  ExecutionPlan plan;     // dp = every GPU, mbs = the local batch, tp = pp = ga = mb = 1
  GpuGroups groups;       // in the allocation's order of types
  std::vector<double> group_ms;  // each group's iteration time
  double iter_ms = 0;     // the slowest group's
  double throughput = 0;  // samples per second
};

// `allocation` must hold at least two GPU types and the same GPUs on every node (what a
// record can say); otherwise infeasible with the reason. Data parallelism only (plain DP
// or ZeRO-1 when options.features allow it, chosen per candidate like the homogeneous
// search); the plan with the least iteration time over every local batch dividing the
// global batch and every split of the accumulation steps.
HeteroPlan best_hetero_plan(const Workload& workload, const Allocation& allocation, const PerfModel& perf,
                            const PlanSearchOptions& options);

// The iteration time of `plan` with `groups` on `allocation`, timed as best_hetero_plan
// times its candidates (the slowest group's); 0 when the groups do not match the
// allocation's types and nodes or a group does not fit its GPUs' memory.
double hetero_iteration_ms(const Workload& workload, const Allocation& allocation, const PerfModel& perf,
                           const ExecutionPlan& plan, const GpuGroups& groups, const MemoryOptions& memory);

}  // namespace morph
