// Where Slurm may start a job submitted to partitions (-p): on their nodes, and, of
// several partitions, in one of them. morphd and `morph simulate --partitions` bound a
// job's placements (JobState::nodes_allowed) by it.
#pragma once

#include <vector>

#include "libmorph/cluster/cluster.h"
#include "libmorph/cluster/slurm_partitions.h"
#include "libmorph/policy/cluster_view.h"

namespace morph::policy {

// Per node of `nodes` (a view of `cluster`'s nodes), whether a job of partitions `part`
// may start there. Of several partitions Slurm starts the job in one: of a GPU type of
// which one of them lets a job have more than one node, only the nodes of the one that
// lets it have the most (PartitionBounds::most_nodes, as AppProfile::nodes_of_type
// counts), so that a placement on several nodes of the type lies in one partition.
std::vector<bool> partition_nodes(const PartitionBounds& part, const std::vector<NodeState>& nodes,
                                  const Cluster& cluster);

}  // namespace morph::policy
