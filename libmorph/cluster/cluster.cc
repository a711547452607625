#include "libmorph/cluster/cluster.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {

const char* to_string(IntraLink link) { return link == IntraLink::nvlink ? "nvlink" : "pcie"; }

namespace {

// GPU types and their aliases name Slurm GRES types and features, and --morph-gpu-type
// takes at most 64 characters.
bool gpu_type_name_ok(std::string_view name) { return is_slurm_name(name) && name.size() <= 64; }

}  // namespace

void Cluster::add_gpu_type(GpuType gpu) {
  if (!gpu_type_name_ok(gpu.name))
    throw Error(fmt::format("GpuType {} is not a Slurm GRES type name (1-64 letters, digits, '-', '_' or '.')",
                            quote(gpu.name)));
  if (find_gpu_type(gpu.name) != nullptr)
    throw Error(fmt::format("GpuType {} is defined twice", quote(gpu.name)));
  for (std::size_t i = 0; i < gpu.aliases.size(); ++i) {
    const std::string& alias = gpu.aliases[i];
    if (!gpu_type_name_ok(alias))
      throw Error(fmt::format("GpuType {}: alias {} is not a Slurm GRES type name (1-64 letters, digits, '-', '_' "
                              "or '.')",
                              quote(gpu.name), quote(alias)));
    if (find_gpu_type(alias) != nullptr)
      throw Error(fmt::format("GpuType {}: alias {} is already a GPU type name", quote(gpu.name), quote(alias)));
    if (to_lower(alias) == to_lower(gpu.name))
      throw Error(fmt::format("GpuType {}: alias {} is the type's own name", quote(gpu.name), quote(alias)));
    for (std::size_t k = 0; k < i; ++k)
      if (to_lower(gpu.aliases[k]) == to_lower(alias))
        throw Error(fmt::format("GpuType {}: alias {} is given twice", quote(gpu.name), quote(alias)));
  }
  gpu_types_.push_back(std::move(gpu));
}

void Cluster::add_node_type(NodeType node) {
  if (find_node_type(node.name) != nullptr)
    throw Error(fmt::format("NodeType {} is defined twice", quote(node.name)));
  if (find_gpu_type(node.gpu) == nullptr)
    throw Error(fmt::format("NodeType {}: Gpu={} is not a GpuType defined before it",
                            quote(node.name), quote(node.gpu)));
  node.gpu = find_gpu_type(node.gpu)->name;
  node_types_.push_back(std::move(node));
}

void Cluster::add_node(NodeRecord node) {
  if (find_node_type(node.node_type) == nullptr)
    throw Error(fmt::format("NodeName {}: NodeType={} is not defined", quote(node.name),
                            quote(node.node_type)));
  if (!node_index_.emplace(node.name, nodes_.size()).second)
    throw Error(fmt::format("NodeName {} is defined twice", quote(node.name)));
  nodes_.push_back(std::move(node));
}

const GpuType* Cluster::find_gpu_type(std::string_view name) const {
  const std::string key = to_lower(name);
  for (const GpuType& g : gpu_types_) {
    if (to_lower(g.name) == key) return &g;
    for (const std::string& alias : g.aliases)
      if (to_lower(alias) == key) return &g;
  }
  return nullptr;
}

const NodeType* Cluster::find_node_type(std::string_view name) const {
  const std::string key = to_lower(name);
  for (const NodeType& n : node_types_)
    if (to_lower(n.name) == key) return &n;
  return nullptr;
}

const NodeType* Cluster::node_type_for_gpu(std::string_view gpu) const {
  for (const NodeType& n : node_types_)
    if (n.gpu == gpu) return &n;
  return nullptr;
}

std::vector<const NodeType*> Cluster::node_types_holding(std::string_view gpu, int gpus_per_node,
                                                         long cpus_per_node) const {
  std::vector<const NodeType*> out;
  for (const NodeType& n : node_types_)
    if (n.gpu == gpu && n.gpus >= gpus_per_node && n.cpus >= cpus_per_node) out.push_back(&n);
  return out;
}

int Cluster::nodes_of(const NodeType& node_type) const {
  int count = 0;
  for (const NodeRecord& n : nodes_)
    if (to_lower(n.node_type) == to_lower(node_type.name)) ++count;
  return count;
}

const GpuType& Cluster::gpu_of(const NodeType& node) const {
  const GpuType* g = find_gpu_type(node.gpu);
  if (g == nullptr) throw Error(fmt::format("NodeType {}: unknown Gpu {}", quote(node.name), quote(node.gpu)));
  return *g;
}

std::string Cluster::gpu_of_node(std::string_view node) const {
  const NodeRecord* n = find_node(std::string(node));
  const NodeType* type = n != nullptr ? find_node_type(n->node_type) : nullptr;
  return type != nullptr ? type->gpu : std::string{};
}

const NodeRecord* Cluster::find_node(const std::string& name) const {
  const auto it = node_index_.find(name);
  return it != node_index_.end() ? &nodes_[it->second] : nullptr;
}

}  // namespace morph
