// The best heterogeneous data-parallel configuration of a global batch on each GPU
// allocation of a JABAS profile's servers (seed 004 §5.2, §6.3): the local batch B_L shared
// by every worker, and per GPU the virtual workers and accumulation steps, so that
// B = 2 * B_L * M (two identical groups of M decoupled workers, one GPU of each pair in
// each group) and the slowest GPU is as fast as possible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/hetero/allreduce_model.h"
#include "libmorph/hetero/config_solver.h"
#include "libmorph/hetero/iteration_model.h"
#include "libmorph/hetero/jabas_profile.h"

namespace morph {

// GPUs of one server that run the same choice.
struct HeteroGpuGroup {
  std::string server;
  std::string gpu;
  int gpus = 0;
  int workers = 0;   // virtual workers per GPU (n_vsw)
  int ga_steps = 1;  // accumulation steps per worker (n_GA + 1)
  double iter_ms = 0;
};

// The GPUs an allocation takes of one server: JABAS allocates them in pairs (§6.3).
struct ServerGpus {
  const JabasServer* server = nullptr;
  int gpus = 0;  // even, 2 .. server->gpus
};
using GpuAllocation = std::vector<ServerGpus>;

// Every GPU of each of `servers`.
GpuAllocation whole_servers(const std::vector<const JabasServer*>& servers);

struct HeteroConfig {
  std::vector<std::string> servers;  // those the allocation takes GPUs of, by name
  std::vector<int> server_gpus;      // the GPUs it takes of each
  int gpus = 0;
  std::int64_t global_batch = 0;
  int local_batch = 0;  // 0: the global batch is out of reach on these servers
  int group_workers = 0;  // M
  double iter_ms = 0;
  double throughput_samples_per_s = 0;
  WeightSync weight_sync = WeightSync::overlap;
  std::vector<HeteroGpuGroup> groups;
  bool feasible() const { return local_batch > 0; }
};

// "node0:4+node1:2": each server the allocation takes GPUs of, and how many.
std::string allocation_name(const HeteroConfig& config);

// Local batches that every one of `servers` has profiled, ascending.
std::vector<int> common_local_batches(const std::vector<const JabasServer*>& servers);

// One kind per server of the allocation (its GPU pairs): Eq. (6) as fixed + step * n_GA for
// n_vsw = 1 .. min(n_max, M).
std::vector<GpuKindTimes> gpu_kinds(const std::vector<GpuIterationModel>& models, const GpuAllocation& allocation,
                                    int group_workers);

// The models of the allocation's servers at `local_batch`, all-reduce among all its GPUs.
std::vector<GpuIterationModel> server_models(const JabasProfile& profile, const GpuAllocation& allocation,
                                             int local_batch);

HeteroConfig best_hetero_config(const JabasProfile& profile, const GpuAllocation& allocation,
                                std::int64_t global_batch);

// §6.3's candidate allocations Q: m_i / 2 pairs on server i give prod_i (m_i / 2 + 1) - 1
// non-empty allocations (a mixed-radix count, the first server by name the fastest digit;
// with one pair per server, the bits of 1 .. 2^S - 1). At most kMaxHeteroAllocations.
constexpr std::int64_t kMaxHeteroAllocations = std::int64_t{1} << 16;
std::vector<GpuAllocation> gpu_allocations(const JabasProfile& profile);

// The most workers per group M a configuration may have (its solver's time and memory grow
// with M: 2^30 samples at B_L = 16 took 40 s and 640 MB); more is an error.
constexpr std::int64_t kMaxGroupWorkers = std::int64_t{1} << 20;
// The most steps hetero_configs() takes, workers per group times the GPU pairs of every
// allocation times the most virtual workers a GPU may run (seconds); more is an error.
constexpr std::int64_t kMaxHeteroWork = std::int64_t{1} << 27;
// The steps hetero_configs() would take for `global_batch`: the most workers per group
// (the batch over twice the smallest profiled local batch) times the GPU pairs of every
// allocation times the largest n_max profiled, saturated at INT64_MAX.
std::int64_t hetero_search_work(const JabasProfile& profile, std::int64_t global_batch);
// The best configuration of every allocation of gpu_allocations(), in its order.
std::vector<HeteroConfig> hetero_configs(const JabasProfile& profile, std::int64_t global_batch);

}  // namespace morph
