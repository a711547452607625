#include "libmorph/planner/plan_search.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/perf/bandwidth.h"
#include "libmorph/request/limits.h"
#include "libmorph/util/divisors.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

// The GPUs every node of `a` holds a multiple of: t must divide it to stay inside a node.
int node_gpu_gcd(const Allocation& a) {
  int g = 0;
  for (const NodeShare& n : a.nodes) g = std::gcd(g, n.gpus);
  return g;
}

// Whether a (d, t, p) shape breaks a structural rule (Morphling §3, ARCHITECTURE
// "Execution plans"), O(1): sizing weighs thousands of node counts under slurmctld's lock.
bool shape_ok(const Workload& w, int node_gcd, int d, int t, int p) {
  return w.model.heads % t == 0 && w.model.query_groups() % t == 0 && node_gcd % t == 0 &&
         w.model.layers % p == 0 && w.global_batch % d == 0;
}

// The first rule the shape breaks, in words (only for a shape shape_ok refuses).
std::string shape_violation(const Workload& w, const Allocation& a, int d, int t, int p) {
  if (w.model.heads % t != 0) return fmt::format("tp={} does not divide heads={}", t, w.model.heads);
  if (w.model.query_groups() % t != 0)  // Megatron-LM: tp divides num_query_groups
    return fmt::format("tp={} does not divide kv_heads={}", t, w.model.query_groups());
  for (const NodeShare& n : a.nodes)
    if (n.gpus % t != 0)
      return fmt::format("tp={} does not fit inside a node (a node holds {} of the job's GPUs)", t, n.gpus);
  if (w.model.layers % p != 0) return fmt::format("pp={} does not divide layers={}", p, w.model.layers);
  if (w.global_batch % d != 0)
    return fmt::format("global batch {} is not divisible by dp={}", w.global_batch, d);
  return {};
}

// Calls f(d, t, p) for every split of `gpus` GPUs the features allow, t and p ascending.
template <typename F>
void for_each_shape(int gpus, unsigned features, F&& f) {
  for (int t : divisors(gpus)) {
    if (t > 1 && !(features & kFeatureTensor)) break;
    for (int p : divisors(gpus / t)) {
      if (p > 1 && !(features & kFeaturePipeline)) break;
      f(gpus / (t * p), t, p);
    }
  }
}

struct Variant {
  int zero;
  bool offload;
  bool gc;
};

std::vector<Variant> variants(int d, int p, unsigned features) {
  std::vector<Variant> out;
  for (bool gc : {false, true}) {
    if (gc && !(features & kFeatureCheckpointing)) continue;
    out.push_back({0, false, gc});
    if ((features & kFeatureZero) && d > 1)
      for (int z = 1; z <= (p > 1 || !(features & kFeatureShardedZero) ? 1 : 3); ++z) out.push_back({z, false, gc});
    // ZeRO-Offload: DeepSpeed stage 2 with the optimizer on the CPU (no pipelines).
    if ((features & kFeatureOffload) && p == 1) out.push_back({2, true, gc});
  }
  return out;
}

}  // namespace

std::string structure_violation(const Workload& w, const Allocation& a, const ExecutionPlan& plan) {
  if (a.gpus() != plan.gpus())
    return fmt::format("the plan uses {} GPUs, the allocation holds {}", plan.gpus(), a.gpus());
  if (!shape_ok(w, node_gpu_gcd(a), plan.dp, plan.tp, plan.pp)) return shape_violation(w, a, plan.dp, plan.tp, plan.pp);
  if (plan.global_batch() != w.global_batch)
    return fmt::format("the plan processes {} samples per iteration, the global batch is {}", plan.global_batch(),
                       w.global_batch);
  return {};
}

std::string plan_violation(const Workload& w, const Allocation& a, const ExecutionPlan& plan,
                           const MemoryOptions& memory) {
  if (std::string why = structure_violation(w, a, plan); !why.empty()) return why;
  const MemoryFit fit = check_memory(estimate_memory(w.model, w.seq_len, plan, memory), a);
  return fit.fits ? std::string{} : fit.reason;
}

bool any_valid_shape(const Workload& w, int gpus, int gpus_per_node, unsigned features) {
  // t divides a node's GPUs and p the layers (shape_ok), so only those divisors are tried.
  for (int t : divisors(gpus_per_node)) {
    if (t > 1 && !(features & kFeatureTensor)) break;
    for (int p : divisors(w.model.layers)) {
      if (p > 1 && !(features & kFeaturePipeline)) break;
      if (gpus % (t * p) == 0 && shape_ok(w, gpus_per_node, gpus / (t * p), t, p)) return true;
    }
  }
  return false;
}

ExecutionPlan fit_micro_batch(const Workload& w, const Allocation& a, ExecutionPlan plan, const MemoryOptions& memory) {
  const std::int64_t per_replica = std::int64_t{plan.ga_steps} * plan.micro_batches * plan.micro_batch_size;
  const std::vector<int> sizes = divisors(per_replica);
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
    if (*it > plan.micro_batch_size || per_replica / *it > MORPH_MAX_PLAN_VALUE) continue;
    const ExecutionPlan candidate = with_micro_batch_size(plan, per_replica, *it);
    if (check_memory(estimate_memory(w.model, w.seq_len, candidate, memory), a).fits) return candidate;
  }
  return plan;
}

PlanSearch search_plans(const Workload& w, const Allocation& a, const PerfModel& perf,
                        const PlanSearchOptions& options) {
  if (w.global_batch < 1) throw Error(fmt::format("global batch {} must be positive", w.global_batch));
  const int gpus = a.gpus();
  if (gpus < 1) throw Error("the allocation holds no GPUs");
  PlanSearch search;
  const auto k = perf.params.to_array();
  const int node_gcd = node_gpu_gcd(a);

  for_each_shape(gpus, options.features, [&](int d, int t, int p) {
    ExecutionPlan shape;
    shape.dp = d;
    shape.tp = t;
    shape.pp = p;
    if (!shape_ok(w, node_gcd, d, t, p)) {
      PlanOption invalid;
      invalid.plan = shape;
      invalid.reason = shape_violation(w, a, d, t, p);
      search.infeasible.push_back(std::move(invalid));
      return;
    }
    const CommBandwidths bw = comm_bandwidths(shape, a);
    const std::int64_t per_replica = w.global_batch / d;
    for (const Variant& v : variants(d, p, options.features)) {
      ExecutionPlan plan = shape;
      plan.zero_stage = v.zero;
      plan.offload = v.offload;
      plan.checkpointing = v.gc;
      PlanOption best;
      best.plan = plan;
      bool found = false, tried = false;
      for (int mbs : divisors(per_replica)) {
        if (options.max_micro_batch_size > 0 && mbs > options.max_micro_batch_size) break;
        if (mbs > MORPH_MAX_PLAN_VALUE) break;
        const std::int64_t steps = per_replica / mbs;
        if (steps > MORPH_MAX_PLAN_VALUE) {  // the limits every record must keep (request/limits.h)
          best.reason = fmt::format("{} samples per replica need micro-batches of at least {} (at most {} {})",
                                    per_replica, (per_replica + MORPH_MAX_PLAN_VALUE - 1) / MORPH_MAX_PLAN_VALUE,
                                    MORPH_MAX_PLAN_VALUE, p > 1 ? "pipeline micro-batches" : "accumulation steps");
          continue;
        }
        plan = with_micro_batch_size(plan, per_replica, mbs);
        if (options.keep && !options.keep(plan)) continue;
        const MemoryEstimate mem = estimate_memory(w.model, w.seq_len, plan, options.memory);
        const MemoryFit fit = check_memory(mem, a);
        if (!fit.fits) {
          if (!found && !tried) {
            best.plan = plan;
            best.memory = mem;
            best.memory_fit = fit;
            best.reason = best.reason.empty() ? fit.reason : fmt::format("{}, and {}", best.reason, fit.reason);
          }
          break;  // activations only grow with the micro-batch size
        }
        tried = true;
        const IterationTime<double> time = combine(iteration_terms(w, plan, a, perf.forward, bw), k.data());
        if (!(time.iter_ms <= MORPH_MAX_ITER_MS)) {
          if (!found) best.reason = fmt::format("predicted iteration of {:.3g} ms is above {:g} ms", time.iter_ms,
                                                MORPH_MAX_ITER_MS);
          continue;
        }
        const double throughput = static_cast<double>(w.global_batch) / (time.iter_ms / 1e3);
        // Near-ties go to the larger micro-batch (fewer, fuller kernels).
        if (!found || throughput >= best.throughput * (1 - 1e-9)) {
          best = PlanOption{plan, true, {}, mem, fit, time, throughput};
          found = true;
        }
      }
      if (!found && !tried && best.reason.empty() && options.keep) best.reason = "no micro-batching of it is asked for";
      (found ? search.feasible : search.infeasible).push_back(std::move(best));
    }
  });
  std::stable_sort(search.feasible.begin(), search.feasible.end(),
                   [](const PlanOption& x, const PlanOption& y) { return x.throughput > y.throughput; });
  return search;
}

}  // namespace morph
