// An allocation: the GPUs (and CPUs) a job holds on each node, in rank order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/cluster/cluster.h"

namespace morph {

struct NodeShare {
  std::string node;  // node name; empty for a hypothetical node
  NodeType node_type;
  GpuType gpu;
  int gpus = 0;
  int cpus = 0;  // CPU cores of this node given to the job
};

struct Allocation {
  std::vector<NodeShare> nodes;

  int gpus() const;
  std::int64_t cpus() const;  // 64 bits: 65536 nodes of up to 2^20 CPUs
  double min_gpu_memory_bytes() const;
  double min_gpu_speed() const;
  int min_cpus_per_gpu() const;
  int max_gpus_on_a_node() const;
  // "2x8xa100+1x4xv100" style, grouping consecutive equal shares.
  std::string to_string() const;
};

// SPEC: TERM('+'TERM)*, TERM = [NODES'x']GPUS'x'TYPE, e.g. 8xa800, 2x8xa100, 4xa100+4xv100.
// Each term is NODES nodes of the node type that carries TYPE, GPUS GPUs on each.
// CPUs per node are the node's share for those GPUs unless cpus_per_gpu > 0.
Allocation parse_gpus_spec(std::string_view spec, const Cluster& cluster, std::string_view what,
                           int cpus_per_gpu = 0);

// `nodes` shares of `gpus_per_node` GPUs on node type `node`.
Allocation uniform_allocation(const Cluster& cluster, const NodeType& node, int nodes,
                              int gpus_per_node, int cpus_per_gpu = 0);

}  // namespace morph
