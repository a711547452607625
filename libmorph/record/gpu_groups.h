// A heterogeneous data-parallel placement (JABAS, seed 004 §3-4): the job's GPUs come in
// groups, one per GPU type. Every worker processes the same local batch per micro-batch
// (the plan's mbs: convergence does not depend on the GPU mix); a GPU of a group runs
// `workers` concurrent workers that each accumulate `ga_steps` micro-batches, so it takes
// mbs * workers * ga_steps samples of the global batch per iteration.
//
// In the record: groups=a100-80g:nodes=1:workers=1:ga=3,v100-32g:nodes=1:workers=1:ga=1
// In Slurm: an untyped GRES (gres:gpu:N, the same N on every node) and a count constraint
// on the node features, --constraint="[a100-80g*1&v100-32g*1]" (docs/slurm.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace morph {

class Cluster;

struct GpuGroup {
  std::string gpu_type;
  int nodes = 0;
  int workers = 1;   // concurrent workers per GPU (JABAS's virtual workers n_vsw)
  int ga_steps = 1;  // micro-batches each worker accumulates per iteration

  // In 64 bits: each factor may be as large as request/limits.h allows.
  std::int64_t samples_per_gpu(std::int64_t local_batch) const { return local_batch * workers * ga_steps; }
  friend bool operator==(const GpuGroup&, const GpuGroup&) = default;
};

using GpuGroups = std::vector<GpuGroup>;

std::string to_string(const GpuGroups& groups);

// Strict inverse of to_string: at least two groups of distinct GPU types, every count
// positive and within request/limits.h. Throws morph::Error naming `what`.
GpuGroups parse_gpu_groups(std::string_view text, std::string_view what);

// "a100-80g+v100-32g": the types, for messages and MORPH_GPU_TYPE.
std::string group_types(const GpuGroups& groups);

// The group of GPUs of `gpu_type`, or nullptr.
const GpuGroup* find_group(const GpuGroups& groups, std::string_view gpu_type);

// Slurm's count constraint that gives the job each group's nodes: "[F1*n1&F2*n2]", with
// the first node feature (NodeType Features=) of a node type of the group's GPU type that
// holds `gpus_per_node` GPUs and `cpus_per_node` CPUs, one that morph.conf lists enough
// nodes of where there is one (a count takes one feature, not an OR of node types);
// else the type's name.
std::string group_constraint(const GpuGroups& groups, const Cluster& cluster, int gpus_per_node, long cpus_per_node);

}  // namespace morph
