#include "libmorph/policy/plan_oracle.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/planner/hetero_plan.h"
#include "libmorph/planner/plan_search.h"
#include "libmorph/policy/model_refit.h"
#include "libmorph/request/limits.h"
#include "libmorph/util/divisors.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::policy {
namespace {

Allocation allocation_of(const std::vector<NodeState>& nodes, const Shape& shape) {
  const NodeState& n = nodes.at(static_cast<std::size_t>(shape.node));
  Allocation a;
  for (int g : shape.gpus) {
    NodeShare share;
    share.node_type = n.node_type();
    share.gpu = n.gpu;
    share.gpus = g;
    share.cpus = g * shape.cpus_per_gpu;
    a.nodes.push_back(std::move(share));
  }
  return a;
}

int default_cpus_per_gpu(const NodeType& type) { return std::max(1, type.cpus / std::max(1, type.gpus)); }

// `gpus` GPUs on nodes of `type`'s GPUs each, full nodes first; `node` says their hardware.
Shape packed_on(const NodeType& type, int node, int gpus) {
  Shape s;
  s.node = node;
  s.cpus_per_gpu = default_cpus_per_gpu(type);
  for (int left = gpus; left > 0; left -= type.gpus) s.gpus.push_back(std::min(left, type.gpus));
  return s;
}

double iteration_s(const AppProfile& app, const ExecutionPlan& plan, const Allocation& a) {
  return predict_iteration(iteration_terms(app.workload, plan, a, app.perf.forward), app.perf.params).iter_ms / 1e3;
}

// The requested plan re-cut for `gpus` GPUs along data parallelism (Sia's scaling):
// t and p, ZeRO, offload and GC stay; the per-replica batch is split into micro-batches
// of at most the requested size (with_micro_batch_size).
bool scale_dp(const ExecutionPlan& requested, int gpus, std::int64_t global_batch, ExecutionPlan* out) {
  const int model_parallel = requested.tp * requested.pp;
  if (gpus % model_parallel != 0) return false;
  ExecutionPlan p = requested;
  p.dp = gpus / model_parallel;
  if (global_batch % p.dp != 0) return false;
  const std::int64_t per_replica = global_batch / p.dp;
  const std::int64_t mbs = largest_divisor_at_most(per_replica, requested.micro_batch_size);
  if (per_replica / mbs > MORPH_MAX_PLAN_VALUE) return false;
  *out = with_micro_batch_size(p, per_replica, mbs);
  return true;
}

}  // namespace

int Shape::total() const {
  int t = 0;
  for (int g : gpus) t += g;
  return t;
}

Shape shape_of(const std::vector<NodeState>& nodes, const std::vector<Slice>& slices) {
  Shape s;
  if (slices.empty()) return s;
  s.node = slices.front().node;
  int cpus = std::numeric_limits<int>::max();
  const std::string& type = nodes.at(static_cast<std::size_t>(s.node)).node_type().name;
  for (const Slice& slice : slices) {
    if (nodes.at(static_cast<std::size_t>(slice.node)).node_type().name != type)
      throw Error("a job's GPUs must all be on nodes of one type");
    s.gpus.push_back(slice.gpus);
    cpus = std::min(cpus, slice.gpus > 0 ? slice.cpus / slice.gpus : cpus);
  }
  s.cpus_per_gpu = cpus == std::numeric_limits<int>::max() ? 0 : cpus;
  std::sort(s.gpus.begin(), s.gpus.end(), std::greater<>());
  return s;
}

Shape packed_shape(const std::vector<NodeState>& nodes, int node, int gpus) {
  return packed_on(nodes.at(static_cast<std::size_t>(node)).type, node, gpus);
}

Shape request_shape(const std::vector<NodeState>& nodes, int node, int gpus) {
  return packed_on(nodes.at(static_cast<std::size_t>(node)).node_type(), node, gpus);
}

int JobCurve::next(int gpus) const {
  auto it = std::upper_bound(useful.begin(), useful.end(), gpus);
  return it == useful.end() ? 0 : *it;
}

int JobCurve::previous(int gpus) const {
  auto it = std::lower_bound(useful.begin(), useful.end(), gpus);
  return it == useful.begin() ? 0 : *std::prev(it);
}

std::string outside_bounds(const AppProfile& a, int gpus, int nodes) {
  // "2-4 GPUs", "1 node", "2 or more nodes"
  auto range = [](int min, int max, const char* what) {
    const std::string unit = fmt::format("{}{}", what, min == max && min == 1 ? "" : "s");
    if (max == 0) return fmt::format("{} or more {}", min, unit);
    return min == max ? fmt::format("{} {}", min, unit) : fmt::format("{}-{} {}", min, max, unit);
  };
  auto where = [&] { return fmt::format("{} GPU{} on {} node{}", gpus, gpus == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s"); };
  if (gpus < a.min_gpus || (a.max_gpus > 0 && gpus > a.max_gpus))
    return fmt::format("{}: outside the job's {}", where(), range(a.min_gpus, a.max_gpus, "GPU"));
  if (nodes < a.min_nodes || (a.max_nodes > 0 && nodes > a.max_nodes))
    return fmt::format("{}: outside the job's {}", where(), range(a.min_nodes, a.max_nodes, "node"));
  return {};
}

std::string beyond_partitions(const AppProfile& a, const std::string& gpu_type, int nodes) {
  const auto cap = a.nodes_of_type.find(gpu_type);
  if (cap == a.nodes_of_type.end() || nodes <= cap->second) return {};
  return fmt::format("{} {} nodes: the job's partitions hold {}", nodes, gpu_type, cap->second);
}

PlanOracle::PlanOracle(std::map<std::string, AppProfile> apps, MemoryOptions memory, int max_gpus_per_job)
    : apps_(std::move(apps)), memory_(memory), max_gpus_per_job_(max_gpus_per_job) {}

void PlanOracle::forget() {
  best_.clear();
  curves_.clear();
  demand_.clear();
  hetero_.clear();
}

void PlanOracle::require_uniform_nodes() {
  uniform_nodes_ = true;
  forget();
}

void PlanOracle::restrict_to(Admissible admissible) {
  admissible_ = std::move(admissible);
  forget();
}

void PlanOracle::use_refit(const std::string& model, const PerfModel& refit) {
  policy::use_refit(apps_, model, refit);
  forget();
}

const AppProfile& PlanOracle::app(const std::string& name) const {
  auto it = apps_.find(name);
  if (it == apps_.end()) throw Error(fmt::format("unknown application {}", quote(name)));
  return it->second;
}

// Under any freedom the best plan depends on the request only where admissibility is
// restricted, since the user's own plan is always admissible (issue 11: keyed without it,
// a job's request was refused because another job of the application had found nothing
// admissible on that shape, and Morphling-E never started it).
PlanOracle::PlanKey PlanOracle::plan_key(const JobState& job, PlanFreedom freedom) const {
  const bool by_request = freedom != PlanFreedom::any || admissible_;
  return {job.app, freedom, by_request ? to_string(job.requested_plan) : std::string()};
}

std::string PlanOracle::type_key(const std::vector<NodeState>& nodes, int node) const {
  return nodes.at(static_cast<std::size_t>(node)).type.name;
}

double PlanOracle::host_bytes_per_gpu(const JobState& job, const ExecutionPlan& plan) const {
  const AppProfile& a = app(job.app);
  return estimate_memory(a.workload.model, a.workload.seq_len, plan, memory(a)).host_bytes_per_gpu;
}

MemoryOptions PlanOracle::memory(const AppProfile& a) const {
  MemoryOptions m = memory_;
  m.states = a.states;
  return m;
}

std::string PlanOracle::refusal(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                                const Shape& shape) const {
  const AppProfile& a = app(job.app);
  const int gpus = shape.total();
  if (std::string why = outside_bounds(a, gpus, static_cast<int>(shape.gpus.size())); !why.empty()) return why;
  if (uniform_nodes_ && std::adjacent_find(shape.gpus.begin(), shape.gpus.end(), std::not_equal_to<>()) != shape.gpus.end())
    return "Slurm gives every node of a job the same number of GPUs";
  const std::string& type = nodes.at(static_cast<std::size_t>(shape.node)).gpu.name;
  if (!a.gpu_types.empty() && std::find(a.gpu_types.begin(), a.gpu_types.end(), type) == a.gpu_types.end())
    return fmt::format("{} is not among the job's GPU types", type);
  if (std::string why = beyond_partitions(a, type, static_cast<int>(shape.gpus.size())); !why.empty()) return why;
  switch (freedom) {
    case PlanFreedom::any: {
      // The user's own plan on its own count is searched whatever the structural rules say.
      if (admissible_ && gpus == job.requested_plan.gpus()) return {};
      int node_gcd = 0;
      for (int g : shape.gpus) node_gcd = std::gcd(node_gcd, g);
      return any_valid_shape(a.workload, gpus, node_gcd, a.features) ? std::string() : "no plan fits";
    }
    case PlanFreedom::scale_dp: {
      ExecutionPlan scaled;
      return scale_dp(job.requested_plan, gpus, a.workload.global_batch, &scaled)
                 ? std::string()
                 : "the requested plan does not scale to this GPU count";
    }
    case PlanFreedom::exact:
      return gpus == job.requested_plan.gpus() ? std::string() : "the requested plan needs its own GPU count";
  }
  return {};
}

PlanChoice PlanOracle::search(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                              const Shape& shape, double host_bytes_per_gpu_limit) {
  ++stats_.searches;
  PlanChoice c;
  c.reason = refusal(job, freedom, nodes, shape);
  if (!c.reason.empty()) return c;
  const AppProfile& a = app(job.app);
  const Allocation alloc = allocation_of(nodes, shape);
  const int gpus = shape.total();
  // `plan` runs here unless the memory model (when asked) or the free host memory refuse it.
  auto admitted = [&](const ExecutionPlan& plan) {
    return !admissible_ || (plan == job.requested_plan) ||
           admissible_(job.app, nodes.at(static_cast<std::size_t>(shape.node)).gpu.name, plan, shape.gpus);
  };
  auto consider = [&](const ExecutionPlan& plan, bool check_device_memory) {
    const MemoryEstimate estimate = estimate_memory(a.workload.model, a.workload.seq_len, plan, memory(a));
    if (!admitted(plan)) {
      c.reason = "not an admissible configuration";
      return;
    }
    if (std::string why = check_device_memory ? plan_violation(a.workload, alloc, plan, memory(a))
                                              : structure_violation(a.workload, alloc, plan);
        !why.empty()) {
      c.reason = why;
    } else if (estimate.host_bytes_per_gpu > host_bytes_per_gpu_limit) {
      c.reason = "not enough free host memory";
    } else {
      c.feasible = true;
      c.plan = plan;
      c.iteration_s = iteration_s(a, plan, alloc);
      c.host_bytes_per_gpu = estimate.host_bytes_per_gpu;
    }
  };
  switch (freedom) {
    case PlanFreedom::any: {
      PlanSearchOptions options;
      options.features = a.features;
      options.memory = memory(a);
      const PlanSearch s = search_plans(a.workload, alloc, a.perf, options);
      for (const PlanOption& o : s.feasible) {
        if (o.memory.host_bytes_per_gpu > host_bytes_per_gpu_limit || !admitted(o.plan)) continue;
        c.feasible = true;
        c.plan = o.plan;
        c.iteration_s = o.time.iter_ms / 1e3;
        c.host_bytes_per_gpu = o.memory.host_bytes_per_gpu;
        break;
      }
      // The user's own plan on its own GPU count is a candidate even where the search
      // does not enumerate it (its micro-batching) or admits nothing else.
      if (admissible_ && gpus == job.requested_plan.gpus() && (!c.feasible || c.plan != job.requested_plan)) {
        const PlanChoice found = c;
        c = {};
        consider(job.requested_plan, false);
        if (found.feasible && (!c.feasible || found.iteration_s <= c.iteration_s)) c = found;
      }
      if (!c.feasible && c.reason.empty())
        c.reason = s.feasible.empty() ? "no plan fits" : "no admissible plan fits in the free host memory";
      return c;
    }
    case PlanFreedom::scale_dp: {
      ExecutionPlan p;
      scale_dp(job.requested_plan, gpus, a.workload.global_batch, &p);  // refusal() checked it scales
      // The user's plan ran, and more replicas of it never need more memory per GPU: only
      // fewer replicas are re-cut and checked against the memory model.
      const bool trusted = p.dp >= job.requested_plan.dp;
      if (!trusted) p = fit_micro_batch(a.workload, alloc, p, memory(a));
      consider(p, !trusted);
      return c;
    }
    case PlanFreedom::exact: {
      // The user's own plan ran where they asked for it, at most on the GPUs with the
      // most memory: on a type with less, the memory model decides whether it fits.
      const double here = nodes.at(static_cast<std::size_t>(shape.node)).gpu.memory_bytes;
      const bool largest = std::all_of(nodes.begin(), nodes.end(),
                                       [&](const NodeState& n) { return n.gpu.memory_bytes <= here; });
      consider(job.requested_plan, !largest);
      return c;
    }
  }
  return c;
}

const PlanChoice& PlanOracle::best(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                                   const Shape& shape) {
  ++stats_.lookups;
  auto key = std::make_tuple(plan_key(job, freedom), type_key(nodes, shape.node), shape);
  auto it = best_.find(key);
  if (it != best_.end()) return it->second;
  return best_.emplace(std::move(key), search(job, freedom, nodes, shape, std::numeric_limits<double>::infinity()))
      .first->second;
}

PlanChoice PlanOracle::best_within(const JobState& job, PlanFreedom freedom, const std::vector<NodeState>& nodes,
                                   const Shape& shape, double host_bytes_per_gpu) {
  const PlanChoice& b = best(job, freedom, nodes, shape);
  if (!b.feasible || b.host_bytes_per_gpu <= host_bytes_per_gpu) return b;
  return search(job, freedom, nodes, shape, host_bytes_per_gpu);
}

double PlanOracle::predict_s(const JobState& job, const ExecutionPlan& plan, const std::vector<NodeState>& nodes,
                             const std::vector<Slice>& slices, const GpuGroups& groups) const {
  const AppProfile& a = app(job.app);
  const Allocation alloc = to_allocation(nodes, slices);
  if (!groups.empty()) return hetero_iteration_ms(a.workload, alloc, a.perf, plan, groups, memory(a)) / 1e3;
  if (!structure_violation(a.workload, alloc, plan).empty()) return 0;
  return iteration_s(a, plan, alloc);
}

double PlanOracle::current_s(const JobState& job, const std::vector<NodeState>& nodes) const {
  const double predicted = predict_s(job, job.current.plan, nodes, job.current.slices, job.current.groups);
  const double measured = job.measured_iteration_s;
  if (!(measured > 0) || !std::isfinite(measured)) return predicted;
  if (predicted > 0 && !(measured <= kImplausibleRatio * predicted && predicted <= kImplausibleRatio * measured))
    return predicted;
  return measured;
}

const PlanChoice& PlanOracle::best_hetero(const JobState& job, const std::vector<NodeState>& nodes, const Shape& first,
                                          const Shape& second) {
  ++stats_.lookups;
  auto key = std::make_tuple(job.app, type_key(nodes, first.node), first, type_key(nodes, second.node), second);
  if (auto it = hetero_.find(key); it != hetero_.end()) return it->second;
  ++stats_.searches;
  const AppProfile& a = app(job.app);
  PlanChoice c;
  const int gpus = first.total() + second.total();
  auto allowed = [&](const Shape& s) {
    const std::string& type = nodes.at(static_cast<std::size_t>(s.node)).gpu.name;
    return a.gpu_types.empty() || std::find(a.gpu_types.begin(), a.gpu_types.end(), type) != a.gpu_types.end();
  };
  auto beyond = [&](const Shape& s) {
    return beyond_partitions(a, nodes.at(static_cast<std::size_t>(s.node)).gpu.name, static_cast<int>(s.gpus.size()));
  };
  const std::string outside = outside_bounds(a, gpus, static_cast<int>(first.gpus.size() + second.gpus.size()));
  if (!outside.empty()) {
    c.reason = outside;
  } else if (!allowed(first) || !allowed(second)) {
    c.reason = "a GPU type the job may not use";
  } else if (const std::string over = beyond(first).empty() ? beyond(second) : beyond(first); !over.empty()) {
    c.reason = over;
  } else if (a.one_gpu_type) {
    c.reason = "the job keeps one GPU type";
  } else if (admissible_) {
    c.reason = "not an admissible configuration";  // never measured: --measured-only has none
  } else {
    Allocation alloc = allocation_of(nodes, first);
    for (NodeShare& n : allocation_of(nodes, second).nodes) alloc.nodes.push_back(std::move(n));
    PlanSearchOptions options;
    options.features = a.features;
    options.memory = memory(a);
    const HeteroPlan h = best_hetero_plan(a.workload, alloc, a.perf, options);
    c.feasible = h.feasible;
    c.reason = h.reason;
    if (h.feasible) {
      c.plan = h.plan;
      c.groups = h.groups;
      c.iteration_s = h.iter_ms / 1e3;
      c.host_bytes_per_gpu = estimate_memory(a.workload.model, a.workload.seq_len, h.plan, memory(a)).host_bytes_per_gpu;
    }
  }
  return hetero_.emplace(std::move(key), std::move(c)).first->second;
}

// The GPUs of `node`'s type (its share's, NodeState::type) on the nodes `job` may run on
// (its application's, as the memoised answers are). A curve drawn on other nodes of the
// type (morphd: a node drained or freed, another job's share changed) is drawn again.
int PlanOracle::capacity(const JobState& job, const std::vector<NodeState>& nodes, int node) const {
  const std::string& type = nodes.at(static_cast<std::size_t>(node)).type.name;
  int gpus = 0;
  for (std::size_t n = 0; n < nodes.size(); ++n)
    if (nodes[n].type.name == type && (job.nodes_allowed.empty() || job.nodes_allowed[n])) gpus += nodes[n].type.gpus;
  return gpus;
}

const JobCurve& PlanOracle::curve(const JobState& job, PlanFreedom freedom, bool resize,
                                  const std::vector<NodeState>& nodes, int node) {
  const int requested = job.requested_plan.gpus();
  const int room = capacity(job, nodes, node);
  auto key = std::make_tuple(plan_key(job, freedom), type_key(nodes, node), resize, resize ? 0 : requested, room);
  auto it = curves_.find(key);
  if (it != curves_.end()) return it->second;
  const int max_gpus = std::min(room, std::max(max_gpus_per_job_, requested));
  JobCurve c;
  c.rate.assign(static_cast<std::size_t>(std::max(0, max_gpus)) + 1, 0.0);
  double envelope = 0;
  for (int g = 1; g <= max_gpus; ++g) {
    if (!resize && g != requested) continue;
    const Shape shape = packed_shape(nodes, node, g);
    if (!refusal(job, freedom, nodes, shape).empty()) continue;  // most counts of a large cluster: no search
    const double r = best(job, freedom, nodes, shape).rate();
    c.rate[static_cast<std::size_t>(g)] = r;
    if (r > envelope * (1 + 1e-9)) {
      c.useful.push_back(g);
      envelope = r;
    }
  }
  return curves_.emplace(std::move(key), std::move(c)).first->second;
}

double PlanOracle::requested_rate(const JobState& job, const std::vector<NodeState>& nodes, int node) {
  return best(job, PlanFreedom::exact, nodes, request_shape(nodes, node, job.requested_plan.gpus())).rate();
}

int PlanOracle::min_gpus(const JobState& job, PlanFreedom freedom, bool resize, const std::vector<NodeState>& nodes,
                         int node) {
  const int requested = job.requested_plan.gpus();
  auto key = std::make_tuple(job.app, to_string(job.requested_plan), type_key(nodes, node),
                             static_cast<int>(freedom) * 2 + (resize ? 1 : 0), job.promised_iteration_s,
                             capacity(job, nodes, node));
  auto it = demand_.find(key);
  if (it != demand_.end()) return it->second;
  const double target = job.promised_iteration_s > 0 ? 1 / job.promised_iteration_s : requested_rate(job, nodes, node);
  const JobCurve& c = curve(job, freedom, resize, nodes, node);
  int demand = 0, within = 0;
  for (int g : c.useful) {
    if (g > requested) break;
    within = g;
    if (target > 0 && c.at(g) >= target * (1 - 1e-9)) {
      demand = g;
      break;
    }
  }
  if (demand == 0) demand = within > 0 ? within : requested;
  demand_.emplace(std::move(key), demand);
  return demand;
}

}  // namespace morph::policy
