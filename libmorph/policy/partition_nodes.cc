#include "libmorph/policy/partition_nodes.h"

#include <map>
#include <string>

namespace morph::policy {

std::vector<bool> partition_nodes(const PartitionBounds& part, const std::vector<NodeState>& nodes,
                                  const Cluster& cluster) {
  std::map<std::string, const PartitionBounds*> of_type;
  for (const NodeState& node : nodes) {
    auto [best, fresh] = of_type.try_emplace(node.gpu.name, &part);
    if (!fresh) continue;
    auto is_type = [&](const NodeRecord& r) {
      return cluster.gpu_of(*cluster.find_node_type(r.node_type)).name == node.gpu.name;
    };
    int most = 1;
    for (const PartitionBounds& one : part.each)
      if (const int n = one.most_nodes(cluster.nodes(), is_type); n > most) {
        best->second = &one;
        most = n;
      }
  }
  std::vector<bool> inside(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) inside[n] = of_type[nodes[n].gpu.name]->holds(nodes[n].name);
  return inside;
}

}  // namespace morph::policy
