// Free resources per node and where a job's GPUs go: Frenzy's heterogeneity-aware
// scheduling (HAS, seed 002 §IV-B) — a job lands on nodes of one GPU type, on the single
// node whose free GPUs fit it best, or else on the fewest nodes (whole free nodes first,
// the remainder best fit). Free-GPU buckets per type keep a placement O(GPUs per node).
#pragma once

#include <string>
#include <vector>

#include "libmorph/policy/cluster_view.h"

namespace morph::policy {

class NodePool {
 public:
  // Throws morph::Error when the cluster has no GPUs or a node type has none.
  explicit NodePool(const std::vector<NodeState>& nodes);

  int types() const { return static_cast<int>(type_names_.size()); }
  const std::string& type_name(int type) const { return type_names_[static_cast<std::size_t>(type)]; }
  int type_of(int node) const { return node_type_[static_cast<std::size_t>(node)]; }
  int any_node_of(int type) const { return first_node_[static_cast<std::size_t>(type)]; }
  int gpus_per_node(int type) const { return gpus_per_node_[static_cast<std::size_t>(type)]; }
  int capacity(int type) const { return capacity_[static_cast<std::size_t>(type)]; }
  int free_gpus_of_type(int type) const { return free_of_type_[static_cast<std::size_t>(type)]; }
  // GPU types ordered by memory, smallest first (HAS tries the tightest fit first).
  const std::vector<int>& types_by_memory() const { return by_memory_; }

  int free_gpus(int node) const { return free_gpus_[static_cast<std::size_t>(node)]; }
  int free_cpus(int node) const { return free_cpus_[static_cast<std::size_t>(node)]; }
  double free_memory(int node) const { return free_memory_[static_cast<std::size_t>(node)]; }

  // Throws morph::Error when a slice exceeds what is free (a policy bug).
  void take(const Slice& slice);
  void give(const Slice& slice);
  void take(const std::vector<Slice>& slices);
  void give(const std::vector<Slice>& slices);

  // HAS placement of `gpus` GPUs on `type` (slices without CPUs or memory), on the nodes
  // `allowed` marks (JobState::nodes_allowed; null or empty: any); empty when they have
  // fewer free GPUs.
  std::vector<Slice> place(int type, int gpus, const std::vector<bool>* allowed = nullptr) const;

 private:
  void move_bucket(int node, int from, int to);

  const std::vector<NodeState>* nodes_;
  std::vector<std::string> type_names_;
  std::vector<int> node_type_, first_node_, gpus_per_node_, capacity_, free_of_type_, by_memory_;
  std::vector<int> free_gpus_, free_cpus_;
  std::vector<double> free_memory_;
  // buckets_[type][f]: nodes of `type` with f free GPUs; slot_[node]: position in its bucket.
  std::vector<std::vector<std::vector<int>>> buckets_;
  std::vector<std::size_t> slot_;
};

}  // namespace morph::policy
