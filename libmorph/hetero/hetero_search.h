// The best heterogeneous data-parallel configuration of a global batch on each set of
// servers of a JABAS profile (seed 004 §5.2): the local batch B_L shared by every worker,
// and per GPU the virtual workers and accumulation steps, so that
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

struct HeteroConfig {
  std::vector<std::string> servers;
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

// Local batches that every one of `servers` has profiled, ascending.
std::vector<int> common_local_batches(const std::vector<const JabasServer*>& servers);

// One kind per server (a GPU pair each): Eq. (6) as fixed + step * n_GA for n_vsw = 1 ..
// min(n_max, M).
std::vector<GpuKindTimes> gpu_kinds(const std::vector<GpuIterationModel>& models,
                                    const std::vector<const JabasServer*>& servers, int group_workers);

// The models of `servers` at `local_batch`, all-reduce among all their GPUs.
std::vector<GpuIterationModel> server_models(const JabasProfile& profile, const std::vector<const JabasServer*>& servers,
                                             int local_batch);

HeteroConfig best_hetero_config(const JabasProfile& profile, const std::vector<const JabasServer*>& servers,
                                std::int64_t global_batch);

// Every non-empty set of the profile's servers (the bits of 1 .. 2^S - 1 over servers by
// name); at most kMaxHeteroServers servers.
constexpr int kMaxHeteroServers = 16;
// The most workers per group M a configuration may have (its solver's time and memory grow
// with M: 2^30 samples at B_L = 16 took 40 s and 640 MB); more is an error.
constexpr std::int64_t kMaxGroupWorkers = std::int64_t{1} << 20;
// The most steps hetero_configs() takes, workers per group times GPU pairs times the server
// sets each pair is in (about a second); more is an error.
constexpr std::int64_t kMaxHeteroWork = std::int64_t{1} << 27;
std::vector<HeteroConfig> hetero_configs(const JabasProfile& profile, std::int64_t global_batch);

}  // namespace morph
