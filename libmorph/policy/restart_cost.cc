#include "libmorph/policy/restart_cost.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::policy {

const char* to_string(ChangePath path) {
  switch (path) {
    case ChangePath::start: return "start";
    case ChangePath::inplace: return "inplace";
    case ChangePath::shrink: return "shrink";
    case ChangePath::requeue: return "requeue";
  }
  return "?";
}

NodeShape node_shape(const std::vector<NodeState>& nodes, const std::vector<Slice>& slices) {
  NodeShape s;
  if (slices.empty()) return s;
  const Slice& first = slices.front();
  s.gpu_type = nodes.at(static_cast<std::size_t>(first.node)).gpu.name;
  s.nodes = static_cast<int>(slices.size());
  s.gpus_per_node = first.gpus;
  s.cpus_per_gpu = first.gpus > 0 ? first.cpus / first.gpus : 0;
  for (const Slice& x : slices)
    s.uniform = s.uniform && x.gpus == first.gpus && x.cpus == first.cpus &&
                nodes.at(static_cast<std::size_t>(x.node)).gpu.name == s.gpu_type;
  return s;
}

ChangePath change_path(const NodeShape& from, const NodeShape& to) {
  if (from.nodes == 0) return ChangePath::start;
  const bool same_nodes = from.uniform && to.uniform && from.gpu_type == to.gpu_type &&
                          from.gpus_per_node == to.gpus_per_node && from.cpus_per_gpu == to.cpus_per_gpu;
  if (same_nodes && to.nodes == from.nodes) return ChangePath::inplace;
  if (same_nodes && to.nodes < from.nodes) return ChangePath::shrink;
  return ChangePath::requeue;
}

ChangePath start_path(const JobState& job) { return job.restarts > 0 ? ChangePath::requeue : ChangePath::start; }

ChangePath change_path(const JobState& job, const std::vector<NodeState>& nodes, const std::vector<Slice>& target) {
  if (!job.running()) return start_path(job);
  if (job.record_locked) return ChangePath::requeue;
  const ChangePath path = change_path(node_shape(nodes, job.current.slices), node_shape(nodes, target));
  if (path != ChangePath::inplace && path != ChangePath::shrink) return path;
  // A record names counts, not nodes: in place the job stays on its nodes, and a shrink
  // keeps the first of them in Slurm's node order (the view's). Anywhere else in the same
  // shape is a requeue.
  std::vector<int> own, to;
  for (const Slice& s : job.current.slices) own.push_back(s.node);
  for (const Slice& t : target) to.push_back(t.node);
  std::sort(own.begin(), own.end());
  std::sort(to.begin(), to.end());
  own.resize(to.size());
  return own == to ? path : ChangePath::requeue;
}

ChangePath change_path(const JobState& job, const std::vector<NodeState>& nodes, const std::vector<Slice>& target,
                       const ExecutionPlan& plan, const PlanOracle& oracle) {
  return within_host_memory(change_path(job, nodes, target), job, plan, oracle);
}

ChangePath within_host_memory(ChangePath path, const JobState& job, const ExecutionPlan& plan,
                              const PlanOracle& oracle) {
  if ((path != ChangePath::inplace && path != ChangePath::shrink) || !job.running()) return path;
  const double gpus_per_node = job.current.slices.front().gpus;
  auto host_bytes_per_node = [&](const ExecutionPlan& p) {
    return std::max(job.min_host_bytes_per_node, oracle.host_bytes_per_gpu(job, p) * gpus_per_node);
  };
  return host_bytes_per_node(plan) > host_bytes_per_node(job.current.plan) ? ChangePath::requeue : path;
}

double RestartCosts::of(ChangePath path) const {
  switch (path) {
    case ChangePath::start: return start_s;
    case ChangePath::inplace: return inplace_s;
    case ChangePath::shrink: return shrink_s;
    case ChangePath::requeue: return requeue_s;
  }
  return requeue_s;
}

RestartCosts parse_restart_costs(const std::string& text, const std::string& what, RestartCosts base) {
  for (std::string_view item : split(text, ',')) {
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw Error(fmt::format("{}: {} is not PATH=SECONDS (PATH: start, inplace, shrink, requeue)", what, quote(item)));
    const std::string path = to_lower(trim(item.substr(0, eq)));
    const double seconds = parse_double(trim(item.substr(eq + 1)), fmt::format("{}: {}", what, path), 0, 1e6);
    if (path == "start") base.start_s = seconds;
    else if (path == "inplace") base.inplace_s = seconds;
    else if (path == "shrink") base.shrink_s = seconds;
    else if (path == "requeue") base.requeue_s = seconds;
    else throw Error(fmt::format("{}: {} is not a path (start, inplace, shrink, requeue)", what, quote(path)));
  }
  return base;
}

}  // namespace morph::policy
