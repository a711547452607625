// Slurm partitions in a simulation (`morph simulate --partitions FILE`): slurm.conf's
// PartitionName lines over the simulated nodes, named node001, node002, ... in the order
// of --cluster. A job of the workload's `partition` column (several joined by '+', as a
// comma separates columns; none: the Default=YES partition) runs only where Slurm would
// start it, bounded as morphd bounds it (daemon/view_builder.cc): on its partitions' nodes
// (policy::partition_nodes), within their GPU types, MinNodes and MaxNodes
// (within_partitions), on at most as many nodes of a type as one of them holds
// (most_nodes_by_gpu_type) and, of several partitions, on one GPU type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libmorph/cluster/cluster.h"
#include "libmorph/cluster/slurm_partitions.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/sim/simulator.h"

namespace morph::sim {

class SimPartitions {
 public:
  // `types`: the configuration whose node and GPU types `nodes` have (morph.conf).
  SimPartitions(std::vector<SlurmPartition> partitions, const std::vector<policy::NodeState>& nodes,
                const Cluster& types);
  // From slurm.conf(5) text at `path`; throws naming the file and line.
  static SimPartitions read(const std::string& path, const std::vector<policy::NodeState>& nodes, const Cluster& types);

  // Binds every job to its partitions (SimJob::partitions): JobState::nodes_allowed, and,
  // where they bound it, an application of its own named `<app>:p<partitions>`. Throws
  // naming the job's row when a partition is unknown, holds none of the simulated nodes,
  // or lets it have too few GPUs for its request.
  void bind(std::vector<SimJob>& jobs) const;
  // `profiles` with the applications bind() named, each its base's bounded by its partitions.
  std::map<std::string, policy::AppProfile> with_bound_apps(std::map<std::string, policy::AppProfile> profiles,
                                                            const std::vector<SimJob>& jobs) const;

 private:
  struct Bounds {
    PartitionBounds part;
    std::vector<bool> nodes_allowed;          // empty: every node
    std::map<std::string, int> nodes_of_type;  // AppProfile::nodes_of_type
  };
  // Worked out once per partition list: a workload names few, over many jobs.
  const Bounds& bounds_of(const SimJob& job) const;

  mutable std::map<std::string, Bounds> bounds_;  // by SimJob::partitions
  std::vector<SlurmPartition> partitions_;
  std::vector<policy::NodeState> nodes_;
  Cluster cluster_;  // `types` with the simulated nodes as its NodeName records
};

// The application whose measurements a job's (possibly bound) application key names:
// "vit:pa100" -> "vit".
std::string measured_app(const std::string& app);

}  // namespace morph::sim
