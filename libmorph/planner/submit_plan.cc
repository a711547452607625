#include "libmorph/planner/submit_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "libmorph/planner/framework_planning.h"
#include "libmorph/planner/plan_search.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

struct Candidate {
  const NodeType* node = nullptr;
  int nodes = 0;
  int gpus_per_node = 0;
  int cpus_per_gpu = 0;  // 0: the node's share
  PlanOption best;
  int gpus() const { return nodes * gpus_per_node; }
  double per_gpu() const { return best.throughput / gpus(); }
};

bool allowed_type(const MorphRequest& r, const Cluster& cluster, const NodeType& node) {
  if (r.gpu_types.empty()) return true;
  for (const std::string& t : r.gpu_types) {
    const GpuType* g = cluster.find_gpu_type(t);
    if (g != nullptr && g->name == node.gpu) return true;
  }
  return false;
}

// The GPU types the record keeps for the job: those of --morph-gpu-types (none: any) that
// the user's -w, -x, --constraint, --mincpus and -c leave any node of (`available`), where
// these exclude one; morphd never moves the job beyond them (a pending job updated onto
// nodes its own options exclude would wait for ever). Else the request's own list. Names
// are morph.conf's (`a100-80g` for `--morph-gpu-type=A100`), as updates compare them.
std::vector<std::string> types_within_constraints(const MorphRequest& r, const Cluster& cluster,
                                                  const std::map<std::string, int>& available) {
  std::vector<std::string> allowed, usable, requested;
  auto add = [](std::vector<std::string>& list, const std::string& gpu) {
    if (std::find(list.begin(), list.end(), gpu) == list.end()) list.push_back(gpu);
  };
  for (const NodeType& node : cluster.node_types()) {
    if (!allowed_type(r, cluster, node)) continue;
    add(allowed, node.gpu);
    if (available.count(node.name)) add(usable, node.gpu);
  }
  if (usable.size() < allowed.size()) return usable;
  for (const std::string& t : r.gpu_types) add(requested, cluster.find_gpu_type(t)->name);  // checked known
  return requested;
}

Placement placement_of(const Candidate& c) {
  Placement p;
  p.gpu_type = c.node->gpu;
  p.nodes = c.nodes;
  p.gpus_per_node = c.gpus_per_node;
  p.cpus_per_gpu = c.cpus_per_gpu > 0 ? c.cpus_per_gpu : std::max(1, c.node->cpus / c.node->gpus);
  p.plan = c.best.plan;
  p.iter_ms = c.best.time.iter_ms;
  return p;
}

// Better: higher throughput per GPU; near-ties go to fewer nodes, then more GPUs.
bool better(const Candidate& a, const Candidate& b) {
  const double pa = a.per_gpu(), pb = b.per_gpu();
  if (std::abs(pa - pb) > 1e-9 * std::max(pa, pb)) return pa > pb;
  if (a.nodes != b.nodes) return a.nodes < b.nodes;
  return a.gpus() > b.gpus();
}

// The infeasible plan that came nearest to fitting in memory, over the allocations
// weighed: what a refusal names.
struct Closest {
  double bytes = 0;
  std::string reason;
  void weigh(const PlanOption& o) {
    if (o.memory.gpu_bytes() <= 0 || (bytes > 0 && o.memory.gpu_bytes() >= bytes)) return;
    bytes = o.memory.gpu_bytes();
    reason = fmt::format("{} with {}", o.reason, to_string(o.plan));
  }
};

// Keys of a partial plan "dp=4,tp=2" that a full plan must match.
bool matches(const ExecutionPlan& p, const std::string& partial) {
  if (partial.empty()) return true;
  for (const auto& [key, value] : parse_key_values(partial, ',', "--morph-plan"))
    if (plan_value(p, key) != parse_int(value, "--morph-plan: " + key, 0, INT32_MAX)) return false;
  return true;
}

}  // namespace

SubmitDecision decide_submission(const SubmitContext& ctx, const MorphRequest& request,
                                 const std::optional<UserGpuRequest>& user_gpus, const SubmitConstraints& constraints) {
  SubmitDecision d;
  d.record.request = request;
  const Cluster& cluster = ctx.config.cluster;
  for (const std::string& type : request.gpu_types)
    if (cluster.find_gpu_type(type) == nullptr)
      throw Error(fmt::format("--morph-gpu-type: this cluster has no GPU type {}", quote(type)));
  Workload w;
  w.model = ctx.catalog.resolve(request.model, "--morph-model");
  w.global_batch = request.global_batch;
  w.seq_len = request.seq_len > 0 ? request.seq_len : w.model.seq_len;
  d.record.request.seq_len = w.seq_len;  // the record keeps what the plan was made for
  PlanSearchOptions options;
  options.features = allowed_plan_features(request, ctx.config.allowed_plans);
  options.max_micro_batch_size = ctx.config.max_micro_batch_size;
  options.memory = framework_memory(ctx.config.memory, request.framework);
  if (!request.sla_given) d.record.request.sla = ctx.config.policy.guaranteed_by_default ? Sla::guaranteed : Sla::best_effort;

  constraints.validate(cluster);
  const int cpus_per_gpu = constraints.cpus_per_gpu;
  auto evaluate = [&](const NodeType& node, int nodes, int gpus_per_node, Closest* closest) -> std::optional<Candidate> {
    const Allocation a = uniform_allocation(cluster, node, nodes, gpus_per_node, cpus_per_gpu);
    const PerfModel perf = ctx.perf.model_for(w.model, w.seq_len, cluster.gpu_of(node), ctx.config.compute_efficiency);
    PlanSearch s = search_plans(w, a, perf, options);
    if (s.feasible.empty()) {
      for (const PlanOption& o : s.infeasible) closest->weigh(o);
      return std::nullopt;
    }
    return Candidate{&node, nodes, gpus_per_node, cpus_per_gpu, std::move(s.feasible.front())};
  };

  std::map<std::string, std::string> excluded;
  const std::map<std::string, int> available = usable_nodes(cluster, constraints, &excluded);
  // A --mem above every node the request may use: one line that says so, not one per type.
  if (constraints.min_memory_mb_per_node > 0) {
    std::int64_t largest = 0;
    for (const NodeType& node : cluster.node_types())
      if (allowed_type(request, cluster, node) && cluster.nodes_of(node) > 0)
        largest = std::max(largest, node_memory_mb(node));
    if (largest > 0 && constraints.min_memory_mb_per_node > largest) {
      d.reason = fmt::format("--mem: {} MB per node is more than any node type Morph may use has (largest: {} MB)",
                             constraints.min_memory_mb_per_node, largest);
      return d;
    }
  }

  // The baseline: the user's own GPUs, with the best plan that matches --morph-plan.
  std::optional<Candidate> baseline;
  if (user_gpus && constraints.partitions) {  // Slurm would refuse it, saying less
    const PartitionBounds& part = *constraints.partitions;
    if ((part.max_nodes > 0 && user_gpus->nodes > part.max_nodes) || user_gpus->nodes < part.min_nodes) {
      d.reason = fmt::format("the requested {} nodes are outside partition {}'s {}-{} nodes per job", user_gpus->nodes,
                             part.names, std::max(1, part.min_nodes),
                             part.max_nodes > 0 ? std::to_string(part.max_nodes) : std::string("UNLIMITED"));
      return d;
    }
  }
  if (user_gpus) {
    // The first node type with the GPUs per node (and their -c CPUs) and as many nodes as
    // asked that the user's -w, -x, --constraint, partitions and --morph-gpu-type leave: a
    // baseline is a real allocation of this cluster that Slurm could give the job (and -N is
    // the user's, so it sizes nothing before it is checked against morph.conf).
    const NodeType* node = nullptr;
    long most = 0;
    std::string unusable;
    for (const NodeType& n : cluster.node_types()) {
      if ((!user_gpus->per_node.type.empty() && cluster.find_gpu_type(user_gpus->per_node.type) != &cluster.gpu_of(n)) ||
          n.gpus < user_gpus->per_node.count || user_gpus->per_node.count * cpus_per_gpu > n.cpus)
        continue;
      const auto usable = available.find(n.name);
      const std::string why = !allowed_type(request, cluster, n) ? "not among --morph-gpu-type"
                              : usable == available.end()        ? excluded.at(n.name)
                                                                 : std::string();
      if (!why.empty()) {
        unusable += fmt::format("; {}: {}", n.name, why);
        continue;
      }
      most = std::max<long>(most, usable->second);
      if (usable->second >= user_gpus->nodes) {
        node = &n;
        break;
      }
    }
    if (node == nullptr) {
      d.reason = fmt::format("no node type offers {} GPUs{} per node{} on {} nodes ({} {} such nodes{})",
                             user_gpus->per_node.count,
                             user_gpus->per_node.type.empty() ? "" : " of type " + user_gpus->per_node.type,
                             cpus_per_gpu > 0 ? fmt::format(" with {} CPUs each", cpus_per_gpu) : "",
                             user_gpus->nodes,
                             constraints.partitions ? "partition " + constraints.partitions->names + " has"
                                                    : std::string("morph.conf lists"),
                             most, unusable);
      return d;
    }
    if (user_gpus->nodes * user_gpus->per_node.count < request.gpus_min ||
        (request.gpus_max > 0 && user_gpus->nodes * user_gpus->per_node.count > request.gpus_max)) {
      d.reason = fmt::format("the requested {} GPUs are outside --morph-gpus={}-{}",
                             user_gpus->nodes * user_gpus->per_node.count, request.gpus_min,
                             request.gpus_max > 0 ? std::to_string(request.gpus_max) : std::string());
      return d;
    }
    const Allocation a = uniform_allocation(cluster, *node, user_gpus->nodes, user_gpus->per_node.count, cpus_per_gpu);
    const PerfModel perf = ctx.perf.model_for(w.model, w.seq_len, cluster.gpu_of(*node), ctx.config.compute_efficiency);
    PlanSearchOptions only_baseline = options;
    only_baseline.keep = [&](const ExecutionPlan& p) { return matches(p, request.baseline_plan); };
    PlanSearch s = search_plans(w, a, perf, only_baseline);
    if (!s.feasible.empty())  // fastest first, every one matching
      baseline = Candidate{node, user_gpus->nodes, user_gpus->per_node.count, cpus_per_gpu,
                           std::move(s.feasible.front())};
    if (!baseline) {
      Closest closest;
      for (const PlanOption& o : s.infeasible)
        if (matches(o.plan, request.baseline_plan)) closest.weigh(o);
      d.reason = fmt::format("the requested {} x {} {} GPUs run no feasible plan{}{}", user_gpus->nodes,
                             user_gpus->per_node.count, node->gpu,
                             request.baseline_plan.empty() ? "" : " matching --morph-plan " + request.baseline_plan,
                             closest.reason.empty() ? "" : " (closest: " + closest.reason + ")");
      return d;
    }
    d.record.baseline = placement_of(*baseline);
  }
  const bool guaranteed = d.record.request.sla == Sla::guaranteed && baseline.has_value();
  int max_gpus = ctx.config.max_gpus_per_job;
  if (request.gpus_max > 0) max_gpus = std::min(max_gpus, request.gpus_max);
  if (guaranteed) max_gpus = std::min(max_gpus, baseline->gpus());
  const int min_nodes = std::max({1, constraints.node_floor(), static_cast<int>(constraints.required_nodes.size())});
  std::optional<Candidate> best;
  std::string why_not;
  auto explain = [&](const NodeType& node, const std::string& why) {
    why_not += fmt::format("{}{}: {}", why_not.empty() ? "" : "; ", node.gpu, why);
  };
  for (const NodeType& node : cluster.node_types()) {
    if (!allowed_type(request, cluster, node)) continue;
    const auto it = available.find(node.name);
    if (it == available.end()) {
      if (excluded.count(node.name)) explain(node, excluded.at(node.name));
      continue;
    }
    const int max_nodes = constraints.node_limit() > 0 ? std::min(constraints.node_limit(), it->second) : it->second;
    if (min_nodes > max_nodes) {  // no plan to weigh: say which floor it is
      const std::string floor = min_nodes == constraints.min_nodes ? fmt::format("-N {}", min_nodes)
                                : min_nodes == static_cast<int>(constraints.required_nodes.size())
                                    ? fmt::format("-w's {} nodes", min_nodes)
                                    : fmt::format("MinNodes={} of partition {}", min_nodes, constraints.partitions->names);
      explain(node, fmt::format("{} usable node{}, fewer than {}", max_nodes, max_nodes == 1 ? "" : "s", floor));
      continue;
    }
    if (min_nodes > 1 && static_cast<long>(min_nodes) * node.gpus > max_gpus) {
      explain(node, fmt::format("{} whole nodes of {} GPUs are {} GPUs, more than the {} it may have", min_nodes, node.gpus,
                                static_cast<long>(min_nodes) * node.gpus, max_gpus));
      continue;
    }
    bool any = false, capped = false;
    int weighed = 0;
    Closest closest;
    auto consider = [&](int nodes, int gpus_per_node) {
      const int g = nodes * gpus_per_node;
      if (g < request.gpus_min || g > max_gpus || nodes < min_nodes || nodes > max_nodes) return;
      if (cpus_per_gpu > 0 && gpus_per_node * cpus_per_gpu > node.cpus) return;
      if (!any_valid_shape(w, g, gpus_per_node, options.features)) return;  // most node counts of a large cluster
      if (weighed == kMaxGpuCountsWeighed) {
        capped = d.counts_capped = true;
        return;
      }
      ++weighed;
      ++d.gpu_counts_weighed;
      std::optional<Candidate> c = evaluate(node, nodes, gpus_per_node, &closest);
      if (!c) return;
      any = true;
      if (guaranteed && c->best.throughput < baseline->best.throughput) return;
      if (!best || better(*c, *best)) best = std::move(c);
    };
    for (int g = 1; g <= node.gpus; ++g) consider(1, g);  // one node: any GPU count
    for (int n = 2; n <= max_nodes; ++n) consider(n, node.gpus);  // several: whole nodes
    if (any) continue;
    const int most = std::min(max_gpus, max_nodes * node.gpus);
    if (request.gpus_min > most)
      explain(node, fmt::format("at most {} GPUs ({} node{} of {}{}), fewer than --morph-gpus={}", most, max_nodes,
                                max_nodes == 1 ? "" : "s", node.gpus,
                                most == max_gpus ? fmt::format(", MaxGpusPerJob={}", ctx.config.max_gpus_per_job) : "",
                                request.gpus_min));
    else if (weighed == 0)
      explain(node, fmt::format("no GPU count of {}-{} has a plan shape: dp dividing the batch of {}, tp the heads and a "
                                "node's GPUs, pp the layers, within the plans allowed",
                                request.gpus_min, most, w.global_batch));
    else
      explain(node, fmt::format("no plan fits on {}-{} GPUs{}{}", request.gpus_min, most,
                                capped ? fmt::format(" (the {} smallest GPU counts with a plan shape searched)", weighed)
                                    : "",
                                closest.reason.empty() ? "" : " (closest: " + closest.reason + ")"));
  }
  if (!best && guaranteed) best = baseline;  // Morphling: no smaller demand reaches it
  if (!best) {
    d.reason = why_not.empty() ? "the cluster has no nodes of the allowed GPU types" : why_not;
    return d;
  }
  d.accepted = true;
  d.record.request.gpu_types = types_within_constraints(request, cluster, available);
  d.record.current = placement_of(*best);
  d.host_memory_bytes_per_node = best->best.memory_fit.host_bytes_per_node;
  d.message = fmt::format("{} -> {} node{} x {} {}, plan {} ({:.3f} s/iteration{})", describe(request), best->nodes,
                          best->nodes == 1 ? "" : "s", best->gpus_per_node, best->node->gpu, brief(best->best.plan),
                          best->best.time.iter_ms / 1e3,
                          d.counts_capped ? fmt::format("; sized among the {} smallest GPU counts of each type",
                                                        kMaxGpuCountsWeighed)
                                          : "");
  return d;
}

}  // namespace morph
