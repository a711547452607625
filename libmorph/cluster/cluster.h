// The hardware Morph plans for: GPU types, node types and named nodes (from morph.conf).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libmorph/cluster/gpu_type.h"
#include "libmorph/cluster/node_type.h"

namespace morph {

struct NodeRecord {
  std::string name;
  std::string node_type;
};

class Cluster {
 public:
  void add_gpu_type(GpuType gpu);
  void add_node_type(NodeType node);
  void add_node(NodeRecord node);

  const GpuType* find_gpu_type(std::string_view name_or_alias) const;
  const NodeType* find_node_type(std::string_view name) const;
  // The first node type that carries `gpu` (a GpuType name).
  const NodeType* node_type_for_gpu(std::string_view gpu) const;
  // The node types that carry `gpu` (a GpuType name) and hold `gpus_per_node` of them
  // and `cpus_per_node` CPUs, in morph.conf's order.
  std::vector<const NodeType*> node_types_holding(std::string_view gpu, int gpus_per_node, long cpus_per_node) const;
  // The nodes (NodeName lines) of node type `node_type`.
  int nodes_of(const NodeType& node_type) const;
  const GpuType& gpu_of(const NodeType& node) const;
  // The GpuType name of the node called `node` (a NodeName= line), or "" when unknown.
  std::string gpu_of_node(std::string_view node) const;
  // The node called `name` (a NodeName= line), or nullptr; in O(1).
  const NodeRecord* find_node(const std::string& name) const;

  const std::vector<GpuType>& gpu_types() const { return gpu_types_; }
  const std::vector<NodeType>& node_types() const { return node_types_; }
  const std::vector<NodeRecord>& nodes() const { return nodes_; }

 private:
  std::vector<GpuType> gpu_types_;
  std::vector<NodeType> node_types_;
  std::vector<NodeRecord> nodes_;
  std::unordered_map<std::string, std::size_t> node_index_;  // name -> index into nodes_
};

}  // namespace morph
