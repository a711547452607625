#include "libmorph/record/gpu_groups.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "libmorph/cluster/cluster.h"
#include "libmorph/request/limits.h"
#include "libmorph/request/morph_request.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {

std::string to_string(const GpuGroups& groups) {
  std::string out;
  for (const GpuGroup& g : groups)
    out += fmt::format("{}{}:nodes={}:workers={}:ga={}", out.empty() ? "" : ",", g.gpu_type, g.nodes, g.workers,
                       g.ga_steps);
  return out;
}

GpuGroups parse_gpu_groups(std::string_view text, std::string_view what) {
  GpuGroups groups;
  std::set<std::string> types;
  const std::vector<std::string_view> items = split(text, ',');
  if (items.size() > MORPH_MAX_GPU_GROUPS)
    throw Error(fmt::format("{}: {} groups; a placement spans at most {} GPU types", what, items.size(),
                            MORPH_MAX_GPU_GROUPS));
  for (std::string_view item : items) {
    const std::vector<std::string_view> parts = split(item, ':');
    if (parts.size() != 4 || parts[0].empty())
      throw Error(fmt::format("{}: {} is not TYPE:nodes=N:workers=W:ga=A", what, quote(item)));
    GpuGroup g;
    g.gpu_type = std::string(parts[0]);
    const std::pair<const char*, int*> fields[] = {{"nodes", &g.nodes}, {"workers", &g.workers}, {"ga", &g.ga_steps}};
    for (std::size_t i = 0; i < 3; ++i) {
      const std::string_view part = parts[i + 1];
      const std::string key = std::string(fields[i].first) + "=";
      if (part.substr(0, key.size()) != key)
        throw Error(fmt::format("{}: {}: expected {}N, got {}", what, g.gpu_type, key, quote(part)));
      *fields[i].second = static_cast<int>(request_integer(fmt::format("{}: {} {}", what, g.gpu_type, fields[i].first),
                                                           part.substr(key.size()), 1,
                                                           i == 0 ? MORPH_MAX_NODES : MORPH_MAX_PLAN_VALUE));
    }
    if (!types.insert(g.gpu_type).second)
      throw Error(fmt::format("{}: GPU type {} in two groups", what, g.gpu_type));
    groups.push_back(std::move(g));
  }
  if (groups.size() < 2) throw Error(fmt::format("{}: {} has one group; a single GPU type is not heterogeneous", what, quote(text)));
  return groups;
}

std::string group_types(const GpuGroups& groups) {
  std::string out;
  for (const GpuGroup& g : groups) out += (out.empty() ? "" : "+") + g.gpu_type;
  return out;
}

const GpuGroup* find_group(const GpuGroups& groups, std::string_view gpu_type) {
  for (const GpuGroup& g : groups)
    if (g.gpu_type == gpu_type) return &g;
  return nullptr;
}

std::string group_constraint(const GpuGroups& groups, const Cluster& cluster, int gpus_per_node, long cpus_per_node) {
  std::string out;
  for (const GpuGroup& g : groups) {
    const std::vector<const NodeType*> holding = cluster.node_types_holding(g.gpu_type, gpus_per_node, cpus_per_node);
    const auto enough = std::find_if(holding.begin(), holding.end(),
                                     [&](const NodeType* n) { return cluster.nodes_of(*n) >= g.nodes; });
    const NodeType* node = enough != holding.end() ? *enough : holding.empty() ? nullptr : holding.front();
    const std::string& feature = node != nullptr && !node->features.empty() ? node->features.front() : g.gpu_type;
    out += fmt::format("{}{}*{}", out.empty() ? "[" : "&", feature, g.nodes);
  }
  return out + "]";
}

}  // namespace morph
