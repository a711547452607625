#include "libmorph/policy/cluster_view.h"

#include <algorithm>

#include <fmt/format.h>

namespace morph::policy {

int JobAllocation::gpus() const {
  int total = 0;
  for (const Slice& s : slices) total += s.gpus;
  return total;
}

int JobAllocation::cpus() const {
  int total = 0;
  for (const Slice& s : slices) total += s.cpus;
  return total;
}

Action action_of(const JobState& job, const JobAllocation& target) {
  if (!job.running()) return target.empty() ? Action::wait : Action::start;
  if (target.empty()) return Action::preempt;
  return target == job.current ? Action::keep : Action::reconfigure;
}

const char* to_string(Action a) {
  switch (a) {
    case Action::start: return "start";
    case Action::reconfigure: return "reconfigure";
    case Action::preempt: return "preempt";
    case Action::keep: return "keep";
    case Action::wait: return "wait";
  }
  return "?";
}

FreeResources free_resources(const std::vector<NodeState>& nodes, const std::vector<const JobAllocation*>& allocations) {
  FreeResources f;
  for (const NodeState& n : nodes) {
    f.gpus.push_back(n.type.gpus);
    f.cpus.push_back(n.type.cpus);
    f.memory_bytes.push_back(n.type.host_memory_bytes);
  }
  for (const JobAllocation* a : allocations)
    for (const Slice& s : a->slices) {
      f.gpus[static_cast<std::size_t>(s.node)] -= s.gpus;
      f.cpus[static_cast<std::size_t>(s.node)] -= s.cpus;
      f.memory_bytes[static_cast<std::size_t>(s.node)] -= s.memory_bytes;
    }
  return f;
}

std::vector<NodeState> nodes_from_spec(std::string_view spec, const Cluster& cluster, std::string_view what) {
  std::vector<NodeState> nodes;
  for (const NodeShare& share : parse_gpus_spec(spec, cluster, what).nodes) {
    NodeState n;
    n.name = fmt::format("node{:03d}", nodes.size() + 1);
    n.type = share.node_type;
    n.whole = share.node_type;
    n.gpu = share.gpu;
    if (share.gpus != n.type.gpus) {  // a partial node: its share of CPUs and memory
      n.type.host_memory_bytes *= static_cast<double>(share.gpus) / n.type.gpus;
      n.type.name = fmt::format("{}/{}", n.type.name, share.gpus);
      n.type.gpus = share.gpus;
      n.type.cpus = share.cpus;
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

bool frees_room_for(const JobState& job, const JobAllocation& a) {
  if (job.nodes_allowed.empty() || a.slices.empty()) return true;
  return std::any_of(a.slices.begin(), a.slices.end(),
                     [&](const Slice& s) { return job.nodes_allowed[static_cast<std::size_t>(s.node)]; });
}

std::vector<bool> nodes_startable(const JobState& job) {
  if (job.nodes_kept.empty()) return job.nodes_allowed;
  std::vector<bool> startable(job.nodes_kept.size());
  for (std::size_t n = 0; n < startable.size(); ++n)
    startable[n] = !job.nodes_kept[n] && (job.nodes_allowed.empty() || job.nodes_allowed[n]);
  return startable;
}

bool strands(const JobState& job, const std::vector<Slice>& target, ChangePath path) {
  if (job.nodes_kept.empty() || (path != ChangePath::start && path != ChangePath::requeue)) return false;
  return std::any_of(target.begin(), target.end(),
                     [&](const Slice& s) { return job.nodes_kept[static_cast<std::size_t>(s.node)]; });
}

bool on_fewest_nodes(const std::vector<NodeState>& nodes, const JobAllocation& a) {
  if (a.slices.empty()) return false;
  const NodeType& type = nodes.at(static_cast<std::size_t>(a.slices.front().node)).node_type();
  const bool one_type = std::all_of(a.slices.begin(), a.slices.end(), [&](const Slice& s) {
    return nodes.at(static_cast<std::size_t>(s.node)).node_type().name == type.name;
  });
  if (!one_type || type.gpus <= 0) return false;
  return static_cast<int>(a.slices.size()) == (a.gpus() + type.gpus - 1) / type.gpus;
}

bool on_requested_nodes(const std::vector<NodeState>& nodes, const JobState& job, const JobAllocation& a) {
  return !a.empty() && (static_cast<int>(a.slices.size()) <= job.requested_nodes || on_fewest_nodes(nodes, a));
}

bool on_requested_nodes(const std::vector<NodeState>& nodes, const JobState& job) {
  return on_requested_nodes(nodes, job, job.current);
}

void observe_iteration(JobState& job, double iteration_s, bool requested_nodes) {
  job.measured_iteration_s = iteration_s;
  if (job.sla != Sla::guaranteed || iteration_s <= 0 || !job.running()) return;
  if (job.runs_request()) {
    if (job.promised_iteration_s <= 0 && requested_nodes) job.promised_iteration_s = iteration_s;
  } else if (job.promised_iteration_s > 0 && iteration_s > job.promised_iteration_s * (1 + kPromiseTolerance)) {
    job.held_to_request = true;
  }
}

Allocation to_allocation(const std::vector<NodeState>& nodes, const std::vector<Slice>& slices) {
  Allocation a;
  for (const Slice& s : slices) {
    const NodeState& n = nodes[static_cast<std::size_t>(s.node)];
    NodeShare share;
    share.node = n.name;
    share.node_type = n.node_type();
    share.gpu = n.gpu;
    share.gpus = s.gpus;
    share.cpus = s.cpus;
    a.nodes.push_back(std::move(share));
  }
  return a;
}

}  // namespace morph::policy
