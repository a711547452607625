#include "libmorph/planner/submit_constraints.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// -w and -x lists are sorted and without duplicates (SubmitConstraints): a user's 65,536
// names each cost slurmctld a lookup, not a pass over the other list.
bool lists(const std::vector<std::string>& sorted, const std::string& node) {
  return std::binary_search(sorted.begin(), sorted.end(), node);
}

}  // namespace

bool satisfies(const std::vector<std::string>& features, const std::string& expression) {
  if (expression.empty()) return true;
  if (expression.find_first_of("[]()*!:") != std::string::npos)
    throw Error(fmt::format("--constraint: Morph evaluates F, F&G, F,G and F|G, not {}", quote(expression)));
  const bool any = expression.find('|') != std::string::npos;
  if (any && expression.find_first_of("&,") != std::string::npos)
    throw Error(fmt::format("--constraint: {} mixes AND and OR; Morph evaluates one of them", quote(expression)));
  std::string terms = expression;
  std::replace(terms.begin(), terms.end(), '&', ',');
  std::replace(terms.begin(), terms.end(), '|', ',');
  for (std::string_view term : split(terms, ',')) {
    if (term.empty()) throw Error(fmt::format("--constraint: empty feature in {}", quote(expression)));
    const bool has = contains(features, std::string(term));
    if (any && has) return true;
    if (!any && !has) return false;
  }
  return !any;
}

std::int64_t node_memory_mb(const NodeType& type) {
  return static_cast<std::int64_t>(type.host_memory_bytes / (1024.0 * 1024.0));
}

std::vector<std::string> sorted_hosts(std::vector<std::string> hosts) {
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

void SubmitConstraints::validate(const Cluster& cluster) const {
  std::string type;
  for (const std::string& name : required_nodes) {
    const NodeRecord* node = cluster.find_node(name);
    if (node == nullptr) throw Error(fmt::format("-w/--nodelist: node {} is not in morph.conf", quote(name)));
    const std::string& its = cluster.find_node_type(node->node_type)->name;
    if (!type.empty() && its != type)
      throw Error(fmt::format("-w/--nodelist: {} mixes node types {} and {}; a Morph job uses one GPU type",
                              quote(name), type, its));
    type = its;
    if (lists(excluded_nodes, name)) throw Error(fmt::format("-w and -x both name node {}", quote(name)));
  }
  if (max_nodes > 0 && min_nodes > max_nodes) throw Error(fmt::format("-N: {}-{} has MAX below MIN", min_nodes, max_nodes));
  if (max_nodes > 0 && static_cast<int>(required_nodes.size()) > max_nodes)
    throw Error(fmt::format("-w names {} nodes but -N allows at most {}", required_nodes.size(), max_nodes));
  if (partitions)
    for (const std::string& name : required_nodes)
      if (!partitions->holds(name))
        throw Error(fmt::format("-w/--nodelist: node {} is not in partition {}", quote(name), partitions->names));
  satisfies({}, features);  // refuses what cannot be evaluated, for every node type alike
}

std::map<std::string, int> usable_nodes(const Cluster& cluster, const SubmitConstraints& c,
                                        std::map<std::string, std::string>* why_not) {
  // NodeName records may name their NodeType in another letter case.
  auto type_of = [&](const NodeRecord& n) { return cluster.find_node_type(n.node_type)->name; };
  const NodeRecord* required = c.required_nodes.empty() ? nullptr : cluster.find_node(c.required_nodes.front());
  for (const NodeType& type : cluster.node_types()) {
    std::string& why = (*why_not)[type.name];
    if (!satisfies(type.features, c.features)) why = fmt::format("its nodes lack --constraint={}", c.features);
    else if (c.min_cpus_per_node > type.cpus)
      why = fmt::format("its nodes have {} CPUs, fewer than --mincpus={}", type.cpus, c.min_cpus_per_node);
    else if (c.min_memory_mb_per_node > node_memory_mb(type))  // Slurm would leave the job pending for ever
      why = fmt::format("its nodes have {} MB of memory, less than --mem={} MB", node_memory_mb(type),
                        c.min_memory_mb_per_node);
    else if (c.cpus_per_gpu > type.cpus)
      why = fmt::format("its nodes have {} CPUs, fewer than {} per GPU", type.cpus, c.cpus_per_gpu);
    else if (required != nullptr && type_of(*required) != type.name)
      why = "-w/--nodelist names nodes of another type";
    else why_not->erase(type.name);
  }
  std::map<std::string, int> usable, listed, in_partition;
  for (const NodeRecord& n : cluster.nodes()) {
    if (why_not->count(type_of(n))) continue;
    ++listed[type_of(n)];
    if (c.partitions && !c.partitions->holds(n.name)) continue;
    ++in_partition[type_of(n)];
    if (!lists(c.excluded_nodes, n.name)) ++usable[type_of(n)];
  }
  if (c.partitions && !c.partitions->each.empty())  // Slurm runs the job in one of them
    for (auto& [type, count] : usable)
      count = c.partitions->most_nodes(cluster.nodes(), [&](const NodeRecord& n) {
        return type_of(n) == type && !lists(c.excluded_nodes, n.name);
      });
  for (const NodeType& t : cluster.node_types()) {
    if (usable.count(t.name) || why_not->count(t.name)) continue;
    if (!listed.count(t.name)) (*why_not)[t.name] = "morph.conf lists none of its nodes";
    else if (!in_partition.count(t.name))
      (*why_not)[t.name] = fmt::format("partition {} has none of its nodes", c.partitions->names);
    else (*why_not)[t.name] = "-x/--exclude excludes all its nodes";
  }
  return usable;
}

int SubmitConstraints::node_floor() const { return std::max(min_nodes, partitions ? partitions->min_nodes : 0); }

int SubmitConstraints::node_limit() const {
  const int partition = partitions ? partitions->max_nodes : 0;
  if (max_nodes == 0 || partition == 0) return std::max(max_nodes, partition);
  return std::min(max_nodes, partition);
}

}  // namespace morph
