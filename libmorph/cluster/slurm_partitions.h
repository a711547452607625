// Slurm's partitions, as far as they bound where a Morph job may run: the nodes of the
// partitions it was submitted to and how many of them one job may have. job_submit_morph
// reads them from slurm.conf when slurmctld loads it and after each reconfigure (it may
// not ask slurmctld while it holds its locks); morphd from slurmctld (slurm_load_partitions), which also knows the
// partitions `scontrol create partition` added since.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/cluster/cluster.h"

namespace morph {

struct SlurmPartition {
  std::string name;
  std::vector<std::string> nodes;  // expanded host list
  bool all_nodes = false;          // Nodes=ALL, or a node set Morph cannot expand (by feature)
  int max_nodes = 0;               // MaxNodes per job; 0: UNLIMITED
  bool is_default = false;         // Default=YES: a job without -p goes here
  int min_nodes = 0;               // MinNodes per job
};

// The PartitionName lines of slurm.conf(5) text, as Slurm reads them: with
// PartitionName=DEFAULT's values, NodeSet names (defined anywhere in the file), continued
// lines, escaped '#', spaces around '=', keys in any letter case and Include files (%c:
// the ClusterName; read relative to the including file's folder, `dir` for the first,
// by `include`, which returns a file's text). Throws morph::Error naming `what` and the
// line on a malformed partition line.
using IncludeReader = std::string (*)(const std::string& path);
std::vector<SlurmPartition> parse_slurm_partitions(std::string_view text, const std::string& what,
                                                   const std::string& dir, IncludeReader include);
// The same, from the file at `path`.
std::vector<SlurmPartition> read_slurm_partitions(const std::string& path);

// Where a job of `requested` partitions (-p: comma-separated; "" the default) may run:
// the union of their nodes, the largest of their MaxNodes and the least of their MinNodes,
// and, since Slurm runs the job in one of them, each on its own. nullopt when one is not
// in `partitions` (added since, or mistyped: Slurm refuses the job then) or none is the
// default.
struct PartitionBounds {
  std::string names;               // "gpu", "a100,v100": for messages
  bool all_nodes = false;
  std::vector<std::string> nodes;  // sorted, unique; unless all_nodes
  int max_nodes = 0;               // 0: UNLIMITED
  int min_nodes = 0;
  std::vector<PartitionBounds> each = {};  // several partitions: one by one; empty for one

  bool holds(const std::string& node) const;
  // The most of `nodes` for which `counted` holds that one job may have: in one of the
  // partitions, within its MaxNodes.
  int most_nodes(const std::vector<NodeRecord>& nodes, const std::function<bool(const NodeRecord&)>& counted) const;
};
std::optional<PartitionBounds> partition_bounds(const std::vector<SlurmPartition>& partitions,
                                                std::string_view requested);

// The GPU types (canonical, in the order of morph.conf's nodes) of the nodes `cluster`
// lists; of those within `partitions` only, when given.
std::vector<std::string> gpu_types_on(const Cluster& cluster, const PartitionBounds* partitions = nullptr);

// The most nodes of each GPU type a job of `requested` partitions (as partition_bounds)
// may have (PartitionBounds::most_nodes). Only the types of which it may not have every
// node `cluster` lists; empty when one is not in `partitions`.
std::map<std::string, int> most_nodes_by_gpu_type(const Cluster& cluster, const std::vector<SlurmPartition>& partitions,
                                                  std::string_view requested);

// Narrows `types` (canonical GPU type names; empty: any), `min_nodes` and `max_nodes` (0:
// any) to what partitions `part` allow on `cluster`: the GPU types of their nodes, their
// MinNodes and MaxNodes. False when they hold none of the types.
bool within_partitions(const PartitionBounds& part, const Cluster& cluster, std::vector<std::string>* types,
                       int* min_nodes, int* max_nodes);

}  // namespace morph
