// Every execution plan of a workload on an allocation: which are valid, which fit in
// memory, and how fast the feasible ones run (Morphling §5 GetBestPlan, Frenzy MARP).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "libmorph/cluster/allocation.h"
#include "libmorph/memory/memory_model.h"
#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_model.h"
#include "libmorph/plan/plan.h"
#include "libmorph/plan/plan_features.h"

namespace morph {

struct PlanSearchOptions {
  unsigned features = kAllFeatures;
  int max_micro_batch_size = 0;  // 0: any divisor of the per-replica batch
  MemoryOptions memory;
  // When set, only the plans it keeps, micro-batching included: a user's plan that names
  // its accumulation steps or micro-batch size is found though another micro-batch size
  // of its variant is faster.
  std::function<bool(const ExecutionPlan&)> keep;
};

struct PlanOption {
  ExecutionPlan plan;
  bool feasible = false;
  std::string reason;  // why not, when infeasible
  MemoryEstimate memory;
  MemoryFit memory_fit;
  IterationTime<double> time{};
  double throughput = 0;  // samples per second, Morphling §4: b / T_iter
};

struct PlanSearch {
  std::vector<PlanOption> feasible;    // fastest first; the best micro-batch size per variant
  std::vector<PlanOption> infeasible;  // one per (d, t, p) shape or variant, with the reason
};

// Why `plan` cannot run `workload` on `allocation` whatever the memory (GPU counts, t
// inside a node and dividing the heads, p dividing the layers, the global batch), or
// empty when it can.
std::string structure_violation(const Workload& workload, const Allocation& allocation, const ExecutionPlan& plan);

// Whether some (d, t, p) split of `gpus` GPUs, `gpus_per_node` on every node, keeps the
// structural rules of structure_violation; O(divisor pairs of gpus), no allocation built:
// sizing at submission skips the node counts where none does.
bool any_valid_shape(const Workload& workload, int gpus, int gpus_per_node, unsigned features);

// Why `plan` cannot run `workload` on `allocation` (structure first, then memory), or
// empty when it can.
std::string plan_violation(const Workload& workload, const Allocation& allocation, const ExecutionPlan& plan,
                           const MemoryOptions& memory);

// `plan` with the largest micro-batch size, at most its own, that fits in memory (the
// per-replica batch is re-cut into as many accumulation steps or pipeline micro-batches
// as needed). Returns `plan` unchanged when even one sample per micro-batch does not fit.
ExecutionPlan fit_micro_batch(const Workload& workload, const Allocation& allocation, ExecutionPlan plan,
                              const MemoryOptions& memory);

PlanSearch search_plans(const Workload& workload, const Allocation& allocation, const PerfModel& perf,
                        const PlanSearchOptions& options);

}  // namespace morph
