#include "libmorph/planner/hetero_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "libmorph/planner/step_split.h"
#include "libmorph/request/limits.h"

namespace morph {
namespace {

// The allocation with every node's GPUs (and node) of `like`'s type, in the same shape.
Allocation as_type(const Allocation& allocation, const NodeShare& like) {
  Allocation a = allocation;
  for (NodeShare& n : a.nodes) {
    n.node_type = like.node_type;
    n.gpu = like.gpu;
  }
  return a;
}

// Group k's iteration time: the plan of `d` workers with `ga` steps of `local` samples
// each, on the whole allocation as if of its type; +inf when it does not fit there.
double group_iteration_ms(const Workload& workload, const Allocation& all_of_type, const PerfModel& perf, int d,
                          std::int64_t ga, std::int64_t local, int zero, const MemoryOptions& memory) {
  ExecutionPlan p;
  p.dp = d;
  p.zero_stage = zero;
  p.ga_steps = static_cast<int>(ga);
  p.micro_batch_size = static_cast<int>(local);
  Workload w = workload;
  w.global_batch = p.global_batch();
  if (!plan_violation(w, all_of_type, p, memory).empty()) return std::numeric_limits<double>::infinity();
  return predict_iteration(iteration_terms(w, p, all_of_type, perf.forward), perf.params).iter_ms;
}

struct TypeGroup {
  NodeShare like;
  int nodes = 0;
  int gpus = 0;
  Allocation all_of_it;  // the whole allocation as if of this type
};

}  // namespace

HeteroPlan best_hetero_plan(const Workload& workload, const Allocation& allocation, const PerfModel& perf,
                            const PlanSearchOptions& options) {
  HeteroPlan best;
  std::vector<TypeGroup> types;
  for (const NodeShare& n : allocation.nodes) {
    if (n.gpus != allocation.nodes.front().gpus) {
      best.reason = fmt::format("the nodes hold different GPU counts ({}); a heterogeneous plan needs the same on each",
                                allocation.to_string());
      return best;
    }
    auto it = std::find_if(types.begin(), types.end(), [&](const TypeGroup& t) { return t.like.gpu.name == n.gpu.name; });
    if (it == types.end()) it = types.insert(types.end(), TypeGroup{n, 0, 0, as_type(allocation, n)});
    it->nodes += 1;
    it->gpus += n.gpus;
  }
  if (types.size() < 2) {
    best.reason = fmt::format("{} holds one GPU type", allocation.to_string());
    return best;
  }
  const int d = allocation.gpus();
  const std::int64_t batch = workload.global_batch;
  std::vector<std::int64_t> gpus;
  for (const TypeGroup& t : types) gpus.push_back(t.gpus);
  std::vector<int> stages = {0};
  if (options.features & kFeatureZero) stages.push_back(1);

  // Group k's iteration time with `ga` steps of `local` samples under ZeRO `zero`; +inf
  // when that plan does not fit type k's GPUs.
  std::map<std::tuple<std::size_t, std::int64_t, std::int64_t, int>, double> cache;
  auto group_ms = [&](std::size_t k, std::int64_t ga, std::int64_t local, int zero) {
    const auto key = std::make_tuple(k, ga, local, zero);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    return cache[key] = group_iteration_ms(workload, types[k].all_of_it, perf, d, ga, local, zero, options.memory);
  };

  std::string why = "no local batch divides the global batch with at least one micro-batch per GPU";
  // A record keeps mbs and each a_k within MORPH_MAX_PLAN_VALUE (request/limits.h), as
  // search_plans does.
  constexpr std::int64_t kMaxValue = MORPH_MAX_PLAN_VALUE;
  for (std::int64_t local = 1; local <= std::min(batch, kMaxValue); ++local) {
    if (batch % local != 0 || (options.max_micro_batch_size > 0 && local > options.max_micro_batch_size)) continue;
    const std::int64_t steps = batch / local;  // sum_k G_k a_k
    if (steps < d) continue;
    if (steps > d * kMaxValue) {
      why = fmt::format("a local batch of {} needs more than {} accumulation steps per GPU", local, kMaxValue);
      continue;
    }
    for (const int zero : stages) {
      // Memory does not depend on a_k: a local batch one type cannot hold has no split.
      bool fits = true;
      for (std::size_t k = 0; k < types.size(); ++k)
        fits = fits && group_ms(k, 1, local, zero) < std::numeric_limits<double>::infinity();
      if (!fits) {
        why = "no split of the batch fits every GPU type's memory";
        continue;
      }
      // Group k's time grows with its steps a_k (its compute does; the synchronisation
      // does not change), so the split is a min-max search rather than every split.
      const std::vector<std::int64_t> ga = least_slowest_split(
          gpus, kMaxValue, steps, [&](std::size_t k, std::int64_t a) { return group_ms(k, a, local, zero); });
      if (ga.empty()) continue;
      std::vector<double> times;
      for (std::size_t k = 0; k < types.size(); ++k) times.push_back(group_ms(k, ga[k], local, zero));
      const double slowest = *std::max_element(times.begin(), times.end());
      if (!(slowest < std::numeric_limits<double>::infinity())) {
        why = "no split of the batch fits every GPU type's memory";
        continue;
      }
      if (best.feasible && slowest >= best.iter_ms) continue;
      best.feasible = true;
      best.iter_ms = slowest;
      best.group_ms = times;
      best.plan = ExecutionPlan{};
      best.plan.dp = d;
      best.plan.zero_stage = zero;
      best.plan.micro_batch_size = static_cast<int>(local);
      best.groups.clear();
      for (std::size_t k = 0; k < types.size(); ++k)
        best.groups.push_back({types[k].like.gpu.name, types[k].nodes, 1, static_cast<int>(ga[k])});
    }
  }
  if (!best.feasible) best.reason = why;
  else best.throughput = static_cast<double>(batch) / (best.iter_ms / 1e3);
  return best;
}

double hetero_iteration_ms(const Workload& workload, const Allocation& allocation, const PerfModel& perf,
                           const ExecutionPlan& plan, const GpuGroups& groups, const MemoryOptions& memory) {
  const int d = allocation.gpus();
  std::int64_t samples = 0;
  double slowest = 0;
  for (const GpuGroup& g : groups) {
    const auto like = std::find_if(allocation.nodes.begin(), allocation.nodes.end(),
                                   [&](const NodeShare& n) { return n.gpu.name == g.gpu_type; });
    const auto nodes = std::count_if(allocation.nodes.begin(), allocation.nodes.end(),
                                     [&](const NodeShare& n) { return n.gpu.name == g.gpu_type; });
    if (like == allocation.nodes.end() || nodes != g.nodes) return 0;
    samples += static_cast<std::int64_t>(g.nodes) * like->gpus * g.samples_per_gpu(plan.micro_batch_size);
    const double ms = group_iteration_ms(workload, as_type(allocation, *like), perf, d, g.ga_steps * g.workers,
                                         plan.micro_batch_size, plan.zero_stage, memory);
    slowest = std::max(slowest, ms);
  }
  if (samples != workload.global_batch || !(slowest < std::numeric_limits<double>::infinity())) return 0;
  return slowest;
}

}  // namespace morph
