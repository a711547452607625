// Where simulated jobs get their speed: measured iteration times of the Morphling
// artifact's traces (traces/<app>/placements.csv), looked up by the GPU type they were
// measured on, the plan's artifact code and the GPUs per node; what the traces lack
// (other GPU types among them) comes from the fitted model and is counted, so that a
// result says how much of it rests on predictions.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "libmorph/artifact/artifact_spec.h"
#include "libmorph/cluster/cluster.h"
#include "libmorph/plan/plan.h"

namespace morph::sim {

// The artifact's name for a plan: ga, gc, zero-dp, zero-offload (+gc) for data
// parallelism (any ZeRO stage counts as zero-dp, the artifact ran stage 2), PP,TP,DP
// digits for 3D plans without ZeRO, offload or GC; "" for plans the artifact never names.
std::string artifact_code(const ExecutionPlan& plan);

// GPUs per node as the traces write them, in ascending order ("11222").
std::string placement_code(std::vector<int> gpus_per_node);

class TraceTruth {
 public:
  TraceTruth() = default;
  // Every traces/<name>/placements.csv of `dir` whose name is an application of `apps`.
  static TraceTruth load(const std::string& dir, const std::map<std::string, ArtifactWorkload>& apps,
                         const ArtifactSpec& spec, const Cluster& cluster);

  // One measurement on `gpu_type` GPUs (0: the run failed); plans the artifact never
  // names are left out.
  void add(const std::string& app, const std::string& gpu_type, const ExecutionPlan& plan,
           const std::vector<int>& gpus_per_node, double seconds);
  // Measured seconds per iteration; 0 when the traces lack the configuration on that GPU
  // type or the run failed there (out of memory). A job's application bound to
  // partitions ("vit:pa100", sim/partitions.h) was measured as its own ("vit").
  double lookup(const std::string& app, const std::string& gpu_type, const ExecutionPlan& plan,
                const std::vector<int>& gpus_per_node) const;
  std::size_t size() const { return seconds_.size(); }

 private:
  std::map<std::tuple<std::string, std::string, std::string>, double> seconds_;  // (app, GPU type, code/placement)
};

}  // namespace morph::sim
