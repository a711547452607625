// Which CPUs and NUMA node each local rank of a step is bound to (morphrun applies it).
//
// The rule, per node:
//  1. A rank whose GPU has a known locality gets the allowed CPUs local to that GPU. The
//     ranks whose GPUs share the same locality (same local CPU set) split those CPUs evenly
//     into contiguous blocks, in rank order; the rank's NUMA node is its GPU's.
//  2. When the GPU's locality is unknown (no cpus: e.g. the emulated cluster has no GPUs in
//     its topology) or none of its local CPUs is allowed, the rank gets its block of an
//     even contiguous split of all allowed CPUs among all local ranks (NUMA node unknown).
//  3. No rank is ever left without CPUs: with fewer CPUs than ranks, ranks share CPUs
//     (block i is CPU i*cpus/ranks).
// Block sizes differ by at most one CPU; the first blocks get the extra ones.
// OMP_NUM_THREADS is cpus.size() of the rank's binding.
#pragma once

#include <vector>

namespace morph::launch {

struct GpuLocality {
  int gpu_index = 0;       // as the node (CUDA, nvidia-smi) numbers it
  int numa_node = -1;      // -1: unknown
  std::vector<int> cpus;   // OS indices of the PUs local to the GPU; empty when unknown
};

struct RankBinding {
  std::vector<int> cpus;   // OS indices, ascending, never empty when allowed_cpus is not
  int numa_node = -1;      // -1: do not bind memory
};

// rank_gpus[i]: the GPU index of local rank i; allowed_cpus: the CPUs this step may use
// (sched_getaffinity). A GPU index missing from `gpus` counts as unknown locality.
// Throws morph::Error when allowed_cpus is empty.
std::vector<RankBinding> bind_ranks(const std::vector<GpuLocality>& gpus, const std::vector<int>& allowed_cpus,
                                    const std::vector<int>& rank_gpus);

// Block `index` of `count` even contiguous blocks of `cpus` (never empty if cpus is not).
std::vector<int> even_block(const std::vector<int>& cpus, int index, int count);

}  // namespace morph::launch
