// The user's own Slurm options that restrict where and how a plan-agnostic job may run
// (sbatch -p, -w, -x, --constraint, -N, -c, --cpus-per-gpu, --mincpus, --mem). job_submit_morph
// reads them from the job_desc; sizing honours each of them, so that the request it
// writes is one Slurm can satisfy.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libmorph/cluster/cluster.h"
#include "libmorph/cluster/slurm_partitions.h"

namespace morph {

struct SubmitConstraints {
  // Host names, sorted and without duplicates (sorted_hosts()).
  std::vector<std::string> required_nodes;  // -w: the job runs on (at least) these nodes
  std::vector<std::string> excluded_nodes;  // -x
  std::string features;                     // --constraint: F, F&G (or F,G) or F|G
  int min_nodes = 0;                        // -N MIN[-MAX]; 0: any
  int max_nodes = 0;                        // 0: any
  int cpus_per_gpu = 0;                     // -c / --cpus-per-gpu (one task per GPU); 0: the node's share
  int min_cpus_per_node = 0;                // --mincpus; 0: none
  std::int64_t min_memory_mb_per_node = 0;  // --mem, in MB (MiB, as Slurm counts); 0: none
  std::optional<PartitionBounds> partitions;  // -p: its nodes, MinNodes, MaxNodes; nullopt: not known

  // The fewest nodes the job may have: -N's MIN and the partitions' MinNodes; 0: any.
  int node_floor() const;
  // The most nodes the job may have: -N's MAX and the partitions' MaxNodes; 0: any.
  int node_limit() const;

  // Throws morph::Error naming the flag when the constraints contradict each other or
  // name nodes morph.conf does not list, or outside the partitions.
  void validate(const Cluster& cluster) const;
};

// The host memory of one node of `type` in MB, as --mem counts it (MiB, rounded down).
std::int64_t node_memory_mb(const NodeType& type);

// `hosts` sorted, duplicates dropped: the form of SubmitConstraints' node lists.
std::vector<std::string> sorted_hosts(std::vector<std::string> hosts);

// Nodes of each node type the job may use, by node type name; a node type missing from
// the map is excluded. `why_not` gets, per excluded node type, the flag that excludes it.
std::map<std::string, int> usable_nodes(const Cluster& cluster, const SubmitConstraints& constraints,
                                        std::map<std::string, std::string>* why_not);

// Whether `features` (a node type's) satisfy the --constraint expression `expression`.
// Throws morph::Error on what Morph cannot evaluate (brackets, counts, mixed & and |).
bool satisfies(const std::vector<std::string>& features, const std::string& expression);

}  // namespace morph
