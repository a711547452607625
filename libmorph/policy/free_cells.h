// The free GPUs of a round before placement, by the nodes jobs may run on. Slurm starts a
// job only on its partitions' nodes (JobState::nodes_allowed), so a GPU type's free GPUs
// are not one pool: the nodes of a type fall into cells, nodes that the same jobs may use,
// and a job draws only from the cells it reaches, those it may be started on
// (nodes_startable(): not the nodes it may only stay on, where the GPUs it holds are in
// cells it does not reach). Without restricted jobs a type is one cell, and a round counts
// free GPUs per type as Morphling's Algorithm 1 does.
#pragma once

#include <cstddef>
#include <vector>

#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/placement.h"

namespace morph::policy {

class FreeCells {
 public:
  FreeCells(const ClusterView& view, const NodePool& pool);

  int cells() const { return static_cast<int>(type_.size()); }
  int type_of(int cell) const { return type_[static_cast<std::size_t>(cell)]; }
  int cell_of_node(int node) const { return cell_of_node_[static_cast<std::size_t>(node)]; }
  // GPUs of the cell's nodes.
  int capacity(int cell) const { return capacity_[static_cast<std::size_t>(cell)]; }
  // Whether job `job` may take GPUs on the cell's nodes.
  bool reaches(std::size_t job, int cell) const;
  // The cells of `type` job `job` reaches, those fewer jobs' node sets (partitions) reach
  // first: what a job takes there, fewer others could have used.
  const std::vector<int>& order(std::size_t job, int type) const {
    return orders_[static_cast<std::size_t>(restriction_[job] + 1)][static_cast<std::size_t>(type)];
  }
  // Every cell of `type`, in that order.
  const std::vector<int>& of_type(int type) const { return orders_.front()[static_cast<std::size_t>(type)]; }

 private:
  std::vector<int> restriction_;  // per job: index into masks_, -1: any node
  std::vector<std::vector<bool>> masks_;  // distinct nodes_allowed
  std::vector<int> cell_of_node_, type_, capacity_;
  std::vector<std::vector<bool>> reached_by_;  // per cell, per mask
  std::vector<std::vector<std::vector<int>>> orders_;  // per restriction + 1, per GPU type
};

}  // namespace morph::policy
