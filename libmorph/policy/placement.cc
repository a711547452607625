#include "libmorph/policy/placement.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::policy {

NodePool::NodePool(const std::vector<NodeState>& nodes) : nodes_(&nodes) {
  if (nodes.empty()) throw Error("the cluster has no nodes");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeState& n = nodes[i];
    if (n.type.gpus < 1) throw Error(fmt::format("node {} (type {}) has no GPUs", n.name, n.type.name));
    auto it = std::find(type_names_.begin(), type_names_.end(), n.type.name);
    int type = static_cast<int>(it - type_names_.begin());
    if (it == type_names_.end()) {
      type_names_.push_back(n.type.name);
      first_node_.push_back(static_cast<int>(i));
      gpus_per_node_.push_back(n.type.gpus);
      capacity_.push_back(0);
      free_of_type_.push_back(0);
      buckets_.emplace_back(static_cast<std::size_t>(n.type.gpus) + 1);
    } else if (n.type.gpus != gpus_per_node_[static_cast<std::size_t>(type)]) {
      throw Error(fmt::format("nodes of type {} disagree on their GPU count", n.type.name));
    }
    node_type_.push_back(type);
    capacity_[static_cast<std::size_t>(type)] += n.type.gpus;
    free_of_type_[static_cast<std::size_t>(type)] += n.type.gpus;
    free_gpus_.push_back(n.type.gpus);
    free_cpus_.push_back(n.type.cpus);
    free_memory_.push_back(n.type.host_memory_bytes);
    auto& bucket = buckets_[static_cast<std::size_t>(type)][static_cast<std::size_t>(n.type.gpus)];
    slot_.push_back(bucket.size());
    bucket.push_back(static_cast<int>(i));
  }
  by_memory_.resize(type_names_.size());
  std::iota(by_memory_.begin(), by_memory_.end(), 0);
  std::stable_sort(by_memory_.begin(), by_memory_.end(), [&](int a, int b) {
    return nodes[static_cast<std::size_t>(first_node_[static_cast<std::size_t>(a)])].gpu.memory_bytes <
           nodes[static_cast<std::size_t>(first_node_[static_cast<std::size_t>(b)])].gpu.memory_bytes;
  });
}

void NodePool::move_bucket(int node, int from, int to) {
  auto& buckets = buckets_[static_cast<std::size_t>(type_of(node))];
  auto& src = buckets[static_cast<std::size_t>(from)];
  const std::size_t slot = slot_[static_cast<std::size_t>(node)];
  src[slot] = src.back();
  slot_[static_cast<std::size_t>(src[slot])] = slot;
  src.pop_back();
  auto& dst = buckets[static_cast<std::size_t>(to)];
  slot_[static_cast<std::size_t>(node)] = dst.size();
  dst.push_back(node);
}

void NodePool::take(const Slice& s) {
  const auto n = static_cast<std::size_t>(s.node);
  if (s.node < 0 || n >= free_gpus_.size() || s.gpus < 0 || s.gpus > free_gpus_[n] || s.cpus > free_cpus_[n] ||
      s.memory_bytes > free_memory_[n] * (1 + 1e-12))
    throw Error(fmt::format("internal: slice of {} GPUs, {} CPUs on node {} exceeds what is free", s.gpus, s.cpus,
                            s.node));
  move_bucket(s.node, free_gpus_[n], free_gpus_[n] - s.gpus);
  free_gpus_[n] -= s.gpus;
  free_cpus_[n] -= s.cpus;
  free_memory_[n] -= s.memory_bytes;
  free_of_type_[static_cast<std::size_t>(type_of(s.node))] -= s.gpus;
}

void NodePool::give(const Slice& s) {
  const auto n = static_cast<std::size_t>(s.node);
  if (s.node < 0 || n >= free_gpus_.size() || s.gpus < 0 || free_gpus_[n] + s.gpus > (*nodes_)[n].type.gpus ||
      free_cpus_[n] + s.cpus > (*nodes_)[n].type.cpus)
    throw Error(fmt::format("internal: slice of {} GPUs, {} CPUs on node {} returns more than it holds", s.gpus,
                            s.cpus, s.node));
  move_bucket(s.node, free_gpus_[n], free_gpus_[n] + s.gpus);
  free_gpus_[n] += s.gpus;
  free_cpus_[n] += s.cpus;
  free_memory_[n] += s.memory_bytes;
  free_of_type_[static_cast<std::size_t>(type_of(s.node))] += s.gpus;
}

void NodePool::take(const std::vector<Slice>& slices) {
  for (const Slice& s : slices) take(s);
}

void NodePool::give(const std::vector<Slice>& slices) {
  for (const Slice& s : slices) give(s);
}

std::vector<Slice> NodePool::place(int type, int gpus, const std::vector<bool>* allowed) const {
  std::vector<Slice> slices;
  if (gpus < 1 || free_gpus_of_type(type) < gpus) return slices;
  const auto& buckets = buckets_[static_cast<std::size_t>(type)];
  const int per_node = gpus_per_node(type);
  const bool every_node = allowed == nullptr || allowed->empty();
  // Nodes already chosen, or not allowed, are skipped by remembering how many of each
  // bucket were passed.
  std::vector<std::size_t> used(buckets.size(), 0);
  auto available = [&](int f) {
    const auto& bucket = buckets[static_cast<std::size_t>(f)];
    std::size_t& next = used[static_cast<std::size_t>(f)];
    while (!every_node && next < bucket.size() && !(*allowed)[static_cast<std::size_t>(bucket[next])]) ++next;
    return next < bucket.size();
  };
  auto next_node = [&](int f) { return buckets[static_cast<std::size_t>(f)][used[static_cast<std::size_t>(f)]++]; };
  for (int need = gpus; need > 0;) {
    // Best fit: the node with the fewest free GPUs that still holds the rest of the job ...
    for (int f = need; f <= per_node; ++f)
      if (available(f)) {
        slices.push_back({next_node(f), need, 0, 0});
        return slices;
      }
    // ... otherwise the emptiest node, whole, so that the job spans the fewest nodes.
    int largest = per_node;
    while (largest > 0 && !available(largest)) --largest;
    if (largest == 0) return {};
    slices.push_back({next_node(largest), largest, 0, 0});
    need -= largest;
  }
  return slices;
}

}  // namespace morph::policy
