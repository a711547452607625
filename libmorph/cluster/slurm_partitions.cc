#include "libmorph/cluster/slurm_partitions.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/hostlist.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph {
namespace {

constexpr int kMaxIncludeDepth = 8;

// A logical line of slurm.conf and the physical line it starts on (1-based).
struct LogicalLine {
  int number = 0;
  std::string text;
};

// slurm.conf's logical lines, as Slurm reads them (parse_config.c): comments dropped (an
// escaped \# is a '#'); an odd run of trailing backslashes joins the next line to this
// one (the last backslash dropped), an even run does not; "\\" stands for one backslash.
std::vector<LogicalLine> logical_lines(std::string_view text) {
  std::vector<LogicalLine> lines;
  std::string line;
  int number = 0, first = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++number;
    if (line.empty()) first = number;
    std::string kept;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size() && raw[i + 1] == '#') {
        kept += '#';
        ++i;
      } else if (raw[i] == '#') {
        break;
      } else {
        kept += raw[i];
      }
    }
    while (!kept.empty() && (kept.back() == '\r' || kept.back() == ' ' || kept.back() == '\t')) kept.pop_back();
    std::size_t backslashes = 0;
    while (backslashes < kept.size() && kept[kept.size() - 1 - backslashes] == '\\') ++backslashes;
    const bool continued = backslashes % 2 == 1;
    if (continued) kept.pop_back();
    std::string unescaped;  // "\\" -> "\"
    for (std::size_t i = 0; i < kept.size(); ++i) {
      unescaped += kept[i];
      if (kept[i] == '\\' && i + 1 < kept.size() && kept[i + 1] == '\\') ++i;
    }
    line += unescaped;
    if (!continued) {
      if (!trim(line).empty()) lines.push_back({first, line});
      line.clear();
    }
  }
  if (!trim(line).empty()) lines.push_back({first, line});
  return lines;
}

// Whitespace-separated KEY=VALUE words (spaces around '=' allowed, as Slurm's pattern
// does); double quotes keep a value's spaces.
std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::string word;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
      if (any) out.push_back(word);
      word.clear();
      any = false;
    } else {
      word += c;
      any = true;
    }
  }
  if (any) out.push_back(word);
  std::vector<std::string> joined;  // "Key" "=" "value", "Key=" "value", "Key" "=value"
  for (std::string& w : out) {
    const bool glue = !joined.empty() && !joined.back().empty() &&
                      (joined.back().back() == '=' || (!w.empty() && w.front() == '='));
    if (glue) joined.back() += w;
    else if (!w.empty()) joined.push_back(std::move(w));  // a lone "" is no word
  }
  return joined;
}

bool yes(const std::string& value) {
  const std::string v = to_upper(value);
  return v == "YES" || v == "TRUE" || v == "1";
}

// A host list's top-level items: "a[1-2],b,set1" -> "a[1-2]" "b" "set1".
std::vector<std::string> items(std::string_view list) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  if (!item.empty()) out.push_back(item);
  return out;
}

struct NodeSet {
  std::vector<std::string> nodes;
  bool by_feature = false;  // Feature=: which nodes depends on NodeName lines Morph does not read
};

// A partition line as read: its Nodes= is resolved once the whole file is read, since
// a NodeSet may come after the partition that names it.
struct PartitionLine {
  SlurmPartition partition;
  std::string nodes;
  std::string where;
};

struct Reader {
  std::vector<PartitionLine> lines;
  std::map<std::string, NodeSet> node_sets;
  PartitionLine defaults;
  std::string cluster_name;  // for %c in Include
  IncludeReader include;

  void resolve(PartitionLine& line) const {
    SlurmPartition& p = line.partition;
    p.nodes.clear();
    p.all_nodes = false;
    for (const std::string& item : items(line.nodes)) {
      if (to_upper(item) == "ALL") {
        p.all_nodes = true;
      } else if (auto set = node_sets.find(item); set != node_sets.end()) {
        p.all_nodes = p.all_nodes || set->second.by_feature;
        p.nodes.insert(p.nodes.end(), set->second.nodes.begin(), set->second.nodes.end());
      } else {
        for (std::string& n : expand_hostlist(item, line.where + ": Nodes")) p.nodes.push_back(std::move(n));
      }
    }
  }

  static int node_count(const std::string& value, const std::string& what) {
    const std::string v = to_upper(value);
    return v == "UNLIMITED" || v == "INFINITE" ? 0 : static_cast<int>(parse_int(value, what, 0, 1 << 30));
  }

  void partition(const std::vector<std::string>& words, const std::string& where) {
    PartitionLine line = defaults;  // Default= too: Slurm reads each key from DEFAULT's when absent
    line.where = where;
    SlurmPartition& p = line.partition;
    for (const std::string& w : words) {
      const auto eq = w.find('=');
      if (eq == std::string::npos) throw Error(fmt::format("{}: {} is not KEY=VALUE", where, quote(w)));
      const std::string key = to_lower(w.substr(0, eq));
      const std::string value = w.substr(eq + 1);
      if (key == "partitionname") p.name = value;
      else if (key == "nodes") line.nodes = value;
      else if (key == "maxnodes") p.max_nodes = node_count(value, where + ": MaxNodes");
      else if (key == "minnodes") p.min_nodes = node_count(value, where + ": MinNodes");
      else if (key == "default") p.is_default = yes(value);
    }
    if (p.name.empty()) throw Error(fmt::format("{}: PartitionName has no name", where));
    if (to_upper(p.name) == "DEFAULT") defaults = std::move(line);
    else lines.push_back(std::move(line));
  }

  void node_set(const std::vector<std::string>& words, const std::string& where) {
    std::string name;
    NodeSet set;
    for (const std::string& w : words) {
      const auto eq = w.find('=');
      if (eq == std::string::npos) throw Error(fmt::format("{}: {} is not KEY=VALUE", where, quote(w)));
      const std::string key = to_lower(w.substr(0, eq));
      if (key == "nodeset") name = w.substr(eq + 1);
      else if (key == "nodes") set.nodes = expand_hostlist(w.substr(eq + 1), where + ": Nodes");
      else if (key == "feature") set.by_feature = true;
    }
    node_sets[name] = std::move(set);
  }

  void read(std::string_view text, const std::string& what, const std::string& dir, int depth) {
    for (const LogicalLine& line : logical_lines(text)) {
      const std::vector<std::string> w = words(line.text);
      if (w.empty()) continue;
      const std::string where = fmt::format("{}:{}: {}", what, line.number, quote(trim(line.text)));
      const std::string first = to_lower(w.front().substr(0, w.front().find('=')));
      if (first == "partitionname") {
        partition(w, where);
      } else if (first == "nodeset") {
        node_set(w, where);
      } else if (first == "clustername" && w.front().find('=') != std::string::npos) {
        cluster_name = w.front().substr(w.front().find('=') + 1);
      } else if (first == "include" && w.size() == 2 && include != nullptr) {
        if (depth >= kMaxIncludeDepth) throw Error(fmt::format("{}: Include nested deeper than {}", where, kMaxIncludeDepth));
        std::string name = w[1];
        // %c: ClusterName, lower-cased as Slurm stores it (_parse_for_format).
        const std::string cluster = to_lower(cluster_name);
        if (name.find("%c") != std::string::npos && cluster.empty())
          throw Error(fmt::format("{}: Include names %c, and no ClusterName comes before it", where));
        for (std::size_t at = name.find("%c"); at != std::string::npos; at = name.find("%c", at + cluster.size()))
          name.replace(at, 2, cluster);
        std::filesystem::path path = name;
        if (path.is_relative()) path = std::filesystem::path(dir) / path;
        std::string included;
        try {
          included = include(path.string());
        } catch (const Error& e) {
          throw Error(fmt::format("{}: {}", where, e.what()));
        }
        read(included, path.string(), path.parent_path().string(), depth + 1);
      }
    }
  }

  std::vector<SlurmPartition> partitions() {
    std::vector<SlurmPartition> out;
    for (PartitionLine& line : lines) {
      resolve(line);
      out.push_back(std::move(line.partition));
    }
    return out;
  }
};

std::string read_file(const std::string& path) { return read_text_file(path, "slurm.conf", 16u << 20); }

// The union of `chosen`: their nodes, the largest MaxNodes and the least MinNodes.
PartitionBounds bounds_of(const std::vector<const SlurmPartition*>& chosen) {
  PartitionBounds b;
  for (const SlurmPartition* p : chosen) {
    b.names += (b.names.empty() ? "" : ",") + p->name;
    b.all_nodes = b.all_nodes || p->all_nodes;
    b.nodes.insert(b.nodes.end(), p->nodes.begin(), p->nodes.end());
  }
  b.min_nodes = chosen.front()->min_nodes;
  for (const SlurmPartition* p : chosen) b.min_nodes = std::min(b.min_nodes, p->min_nodes);
  const bool unlimited = std::any_of(chosen.begin(), chosen.end(), [](const SlurmPartition* p) { return p->max_nodes == 0; });
  if (!unlimited)
    for (const SlurmPartition* p : chosen) b.max_nodes = std::max(b.max_nodes, p->max_nodes);
  if (b.all_nodes) b.nodes.clear();
  std::sort(b.nodes.begin(), b.nodes.end());
  b.nodes.erase(std::unique(b.nodes.begin(), b.nodes.end()), b.nodes.end());
  return b;
}

}  // namespace

bool PartitionBounds::holds(const std::string& node) const {
  return all_nodes || std::binary_search(nodes.begin(), nodes.end(), node);
}

int PartitionBounds::most_nodes(const std::vector<NodeRecord>& cluster_nodes,
                                const std::function<bool(const NodeRecord&)>& counted) const {
  if (!each.empty()) {
    int most = 0;
    for (const PartitionBounds& one : each) most = std::max(most, one.most_nodes(cluster_nodes, counted));
    return most;
  }
  const auto n = std::count_if(cluster_nodes.begin(), cluster_nodes.end(),
                               [&](const NodeRecord& r) { return holds(r.name) && counted(r); });
  return static_cast<int>(max_nodes > 0 ? std::min<long>(n, max_nodes) : n);
}

std::vector<SlurmPartition> parse_slurm_partitions(std::string_view text, const std::string& what,
                                                   const std::string& dir, IncludeReader include) {
  Reader reader;
  reader.include = include;
  reader.read(text, what, dir, 0);
  return reader.partitions();
}

std::vector<SlurmPartition> read_slurm_partitions(const std::string& path) {
  return parse_slurm_partitions(read_file(path), path, std::filesystem::path(path).parent_path().string(), read_file);
}

std::optional<PartitionBounds> partition_bounds(const std::vector<SlurmPartition>& partitions,
                                                std::string_view requested) {
  std::vector<const SlurmPartition*> chosen;
  if (trim(requested).empty()) {
    for (const SlurmPartition& p : partitions)
      if (p.is_default) chosen = {&p};  // the last Default=YES, as Slurm takes it
  } else {
    for (std::string_view name : split(requested, ',')) {
      const auto p = std::find_if(partitions.begin(), partitions.end(),
                                  [&](const SlurmPartition& q) { return q.name == trim(name); });
      if (p == partitions.end()) return std::nullopt;
      chosen.push_back(&*p);
    }
  }
  if (chosen.empty()) return std::nullopt;
  PartitionBounds b = bounds_of(chosen);
  if (chosen.size() > 1)
    for (const SlurmPartition* p : chosen) b.each.push_back(bounds_of({p}));
  return b;
}

std::vector<std::string> gpu_types_on(const Cluster& cluster, const PartitionBounds* partitions) {
  std::vector<std::string> types;
  for (const NodeRecord& n : cluster.nodes()) {
    const std::string& gpu = cluster.gpu_of(*cluster.find_node_type(n.node_type)).name;
    if ((partitions == nullptr || partitions->holds(n.name)) && std::find(types.begin(), types.end(), gpu) == types.end())
      types.push_back(gpu);
  }
  return types;
}

std::map<std::string, int> most_nodes_by_gpu_type(const Cluster& cluster, const std::vector<SlurmPartition>& partitions,
                                                  std::string_view requested) {
  auto gpu_of = [&](const NodeRecord& n) { return cluster.gpu_of(*cluster.find_node_type(n.node_type)).name; };
  std::map<std::string, int> total, most;
  for (const NodeRecord& n : cluster.nodes()) {
    ++total[gpu_of(n)];
    most.try_emplace(gpu_of(n), 0);
  }
  const std::optional<PartitionBounds> bounds = partition_bounds(partitions, requested);
  if (!bounds) return {};
  for (auto& [gpu, count] : most)
    count = bounds->most_nodes(cluster.nodes(), [&](const NodeRecord& n) { return gpu_of(n) == gpu; });
  std::erase_if(most, [&](const auto& type) { return type.second == total[type.first]; });
  return most;
}

bool within_partitions(const PartitionBounds& part, const Cluster& cluster, std::vector<std::string>* types,
                       int* min_nodes, int* max_nodes) {
  if (part.max_nodes > 0) *max_nodes = *max_nodes == 0 ? part.max_nodes : std::min(*max_nodes, part.max_nodes);
  *min_nodes = std::max(*min_nodes, part.min_nodes);
  if (part.all_nodes) return true;
  std::vector<std::string> offered = gpu_types_on(cluster, &part);
  if (!types->empty())
    std::erase_if(offered, [&](const std::string& gpu) {
      return std::find(types->begin(), types->end(), gpu) == types->end();
    });
  if (offered.empty()) return false;
  if (!types->empty() || offered.size() < gpu_types_on(cluster).size()) *types = std::move(offered);
  return true;
}

}  // namespace morph
