#include "libmorph/cluster/allocation.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

constexpr int kMaxNodesInSpec = 65536;

int default_cpus(const NodeType& node, int gpus) {
  return std::max(1, node.cpus * gpus / std::max(1, node.gpus));
}

NodeShare make_share(const Cluster& cluster, const NodeType& node, int gpus, int cpus_per_gpu) {
  NodeShare share;
  share.node_type = node;
  share.gpu = cluster.gpu_of(node);
  share.gpus = gpus;
  share.cpus = cpus_per_gpu > 0 ? cpus_per_gpu * gpus : default_cpus(node, gpus);
  return share;
}

}  // namespace

int Allocation::gpus() const {
  int total = 0;
  for (const NodeShare& n : nodes) total += n.gpus;
  return total;
}

std::int64_t Allocation::cpus() const {
  std::int64_t total = 0;
  for (const NodeShare& n : nodes) total += n.cpus;
  return total;
}

double Allocation::min_gpu_memory_bytes() const {
  double m = std::numeric_limits<double>::infinity();
  for (const NodeShare& n : nodes) m = std::min(m, n.gpu.memory_bytes);
  return m;
}

double Allocation::min_gpu_speed() const {
  double s = std::numeric_limits<double>::infinity();
  for (const NodeShare& n : nodes) s = std::min(s, n.gpu.speed);
  return s;
}

int Allocation::min_cpus_per_gpu() const {
  int c = std::numeric_limits<int>::max();
  for (const NodeShare& n : nodes) c = std::min(c, n.gpus > 0 ? n.cpus / n.gpus : c);
  return nodes.empty() ? 0 : c;
}

int Allocation::max_gpus_on_a_node() const {
  int g = 0;
  for (const NodeShare& n : nodes) g = std::max(g, n.gpus);
  return g;
}

std::string Allocation::to_string() const {
  std::string out;
  std::size_t i = 0;
  while (i < nodes.size()) {
    std::size_t j = i;
    while (j < nodes.size() && nodes[j].gpus == nodes[i].gpus && nodes[j].gpu.name == nodes[i].gpu.name) ++j;
    if (!out.empty()) out += '+';
    out += j - i > 1 ? fmt::format("{}x{}x{}", j - i, nodes[i].gpus, nodes[i].gpu.name)
                     : fmt::format("{}x{}", nodes[i].gpus, nodes[i].gpu.name);
    i = j;
  }
  return out;
}

Allocation uniform_allocation(const Cluster& cluster, const NodeType& node, int nodes,
                              int gpus_per_node, int cpus_per_gpu) {
  Allocation a;
  a.nodes.assign(static_cast<std::size_t>(nodes), make_share(cluster, node, gpus_per_node, cpus_per_gpu));
  return a;
}

Allocation parse_gpus_spec(std::string_view spec, const Cluster& cluster, std::string_view what,
                           int cpus_per_gpu) {
  if (trim(spec).empty()) throw Error(fmt::format("{}: empty GPU spec (expected e.g. 8xa100 or 2x8xa100)", what));
  Allocation allocation;
  for (std::string_view term : split(spec, '+')) {
    term = trim(term);
    // [NODES 'x'] GPUS 'x' TYPE, where TYPE may itself contain an 'x' (rtx4090).
    auto leading_count = [](std::string_view text, std::string_view& rest) -> std::string_view {
      std::size_t digits = 0;
      while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
      if (digits == 0 || digits >= text.size() || text[digits] != 'x') return {};
      rest = text.substr(digits + 1);
      return text.substr(0, digits);
    };
    std::string_view rest;
    const std::string_view first = leading_count(term, rest);
    std::string_view after_second;
    const std::string_view second = first.empty() ? std::string_view{} : leading_count(rest, after_second);
    const bool with_nodes = !second.empty() && !after_second.empty();
    const std::string_view type_name = with_nodes ? after_second : rest;
    if (term.empty()) throw Error(fmt::format("{}: empty term in {}", what, quote(spec)));
    if (first.empty() || type_name.empty() || (!second.empty() && after_second.empty()))
      throw Error(fmt::format("{}: {} is not GPUSxTYPE or NODESxGPUSxTYPE (e.g. 8xa100, 2x8xa100)",
                              what, quote(term)));
    const GpuType* gpu = cluster.find_gpu_type(type_name);
    if (gpu == nullptr) {
      std::string known;
      for (const GpuType& g : cluster.gpu_types()) known += (known.empty() ? "" : ", ") + g.name;
      throw Error(fmt::format("{}: unknown GPU type {} (known: {})", what, quote(type_name), known));
    }
    const NodeType* node = cluster.node_type_for_gpu(gpu->name);
    if (node == nullptr)
      throw Error(fmt::format("{}: no NodeType carries GPU type {}", what, quote(gpu->name)));
    const int nodes = with_nodes
        ? static_cast<int>(parse_int(first, fmt::format("{}: node count in {}", what, quote(term)), 1, kMaxNodesInSpec))
        : 1;
    const int gpus = static_cast<int>(parse_int(with_nodes ? second : first,
        fmt::format("{}: GPU count in {}", what, quote(term)), 1, node->gpus));
    if (static_cast<std::int64_t>(cpus_per_gpu) * gpus > node->cpus)
      throw Error(fmt::format("{}: {} GPUs of a {} node at {} CPUs per GPU need {} CPUs; its nodes have {}", what,
                              gpus, node->name, cpus_per_gpu, static_cast<std::int64_t>(cpus_per_gpu) * gpus,
                              node->cpus));
    for (int i = 0; i < nodes; ++i)
      allocation.nodes.push_back(make_share(cluster, *node, gpus, cpus_per_gpu));
    if (allocation.nodes.size() > static_cast<std::size_t>(kMaxNodesInSpec))
      throw Error(fmt::format("{}: more than {} nodes", what, kMaxNodesInSpec));
  }
  return allocation;
}

}  // namespace morph
