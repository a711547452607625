#include "libmorph/hetero/hetero_search.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

std::vector<int> common_local_batches(const std::vector<const JabasServer*>& servers) {
  std::vector<int> out;
  if (servers.empty()) return out;
  for (const auto& [lbs, batch] : servers.front()->by_local_batch)
    if (std::all_of(servers.begin(), servers.end(), [lbs](const JabasServer* s) { return s->by_local_batch.count(lbs) > 0; }))
      out.push_back(lbs);
  return out;
}

GpuAllocation whole_servers(const std::vector<const JabasServer*>& servers) {
  GpuAllocation out;
  for (const JabasServer* s : servers) out.push_back({s, s->gpus});
  return out;
}

std::string allocation_name(const HeteroConfig& config) {
  std::string out;
  for (std::size_t i = 0; i < config.servers.size(); ++i)
    out += fmt::format("{}{}:{}", out.empty() ? "" : "+", config.servers[i], config.server_gpus[i]);
  return out;
}

std::vector<GpuIterationModel> server_models(const JabasProfile& profile, const GpuAllocation& allocation,
                                             int local_batch) {
  int gpus = 0;
  for (const ServerGpus& a : allocation) gpus += a.gpus;
  std::vector<GpuIterationModel> models;
  for (const ServerGpus& a : allocation)
    models.push_back(gpu_iteration_model(profile, *a.server, local_batch, gpus, static_cast<int>(allocation.size())));
  return models;
}

std::vector<GpuKindTimes> gpu_kinds(const std::vector<GpuIterationModel>& models, const GpuAllocation& allocation,
                                    int group_workers) {
  std::vector<GpuKindTimes> kinds;
  for (std::size_t i = 0; i < models.size(); ++i) {
    GpuKindTimes k;
    k.count = allocation[i].gpus / 2;
    for (int n = 1; n <= std::min(models[i].max_workers, group_workers); ++n) {
      k.fixed_ms.push_back(models[i].iteration_ms(n, 1));
      k.step_ms.push_back(models[i].step_ms(n));
    }
    kinds.push_back(std::move(k));
  }
  return kinds;
}

HeteroConfig best_hetero_config(const JabasProfile& profile, const GpuAllocation& allocation,
                                std::int64_t global_batch) {
  HeteroConfig best;
  best.global_batch = global_batch;
  best.weight_sync = choose_weight_sync(profile.bucket_mib);
  std::vector<const JabasServer*> servers;
  for (const ServerGpus& a : allocation) {
    servers.push_back(a.server);
    best.servers.push_back(a.server->name);
    best.server_gpus.push_back(a.gpus);
    best.gpus += a.gpus;
  }
  for (int lbs : common_local_batches(servers)) {
    // Two identical groups of M workers each: B = 2 * B_L * M
    if (global_batch % (2 * lbs) != 0) continue;
    const std::int64_t m = global_batch / (2 * lbs);
    if (m < best.gpus / 2 || m > kMaxGroupWorkers) continue;
    const std::vector<GpuIterationModel> models = server_models(profile, allocation, lbs);
    const WorkerSplit split =
        solve_worker_split(gpu_kinds(models, allocation, static_cast<int>(m)), static_cast<int>(m));
    if (!split.feasible() || (best.feasible() && split.iter_ms >= best.iter_ms)) continue;
    best.local_batch = lbs;
    best.group_workers = static_cast<int>(m);
    best.iter_ms = split.iter_ms;
    // Eq. (7): F(C) = B_L * C.n_w * 2 / C.t
    best.throughput_samples_per_s = static_cast<double>(global_batch) / (split.iter_ms / 1e3);
    std::map<std::tuple<int, int, int>, HeteroGpuGroup> groups;
    for (const GpuWorkers& g : split.gpus) {
      HeteroGpuGroup& group = groups[{g.kind, -g.workers, -g.ga_steps}];
      group.server = servers[static_cast<std::size_t>(g.kind)]->name;
      group.gpu = servers[static_cast<std::size_t>(g.kind)]->gpu;
      group.gpus += 2;  // one GPU of the pair in each group
      group.workers = g.workers;
      group.ga_steps = g.ga_steps;
      group.iter_ms = g.iter_ms;
    }
    best.groups.clear();
    for (auto& [key, group] : groups) best.groups.push_back(group);
  }
  return best;
}

namespace {

// prod_i (pairs_i + 1): the allocations and the empty one, or 0 past kMaxHeteroAllocations.
std::int64_t allocation_count(const JabasProfile& profile) {
  std::int64_t count = 1;
  for (const JabasServer& s : profile.servers) {
    count *= s.gpus / 2 + 1;
    if (count - 1 > kMaxHeteroAllocations) return 0;
  }
  return count;
}

}  // namespace

std::vector<GpuAllocation> gpu_allocations(const JabasProfile& profile) {
  const std::int64_t count = allocation_count(profile);
  if (count == 0)
    throw Error(fmt::format("{}: {} servers give more than {} allocations of GPU pairs (prod (GPUs/2 + 1) - 1) to "
                            "search",
                            profile.dir, profile.servers.size(), kMaxHeteroAllocations));
  std::vector<GpuAllocation> out;
  std::vector<int> pairs(profile.servers.size(), 0);  // the digits, server 0 the fastest
  for (std::int64_t k = 1; k < count; ++k) {
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      if (++pairs[i] <= profile.servers[i].gpus / 2) break;
      pairs[i] = 0;
    }
    GpuAllocation a;
    for (std::size_t i = 0; i < pairs.size(); ++i)
      if (pairs[i] > 0) a.push_back({&profile.servers[i], 2 * pairs[i]});
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

// The search costs about M = B / (2 B_L) steps per GPU pair of each allocation and per
// virtual worker a GPU may run (the solver's O(N_H n_max M)).
struct SearchSize {
  int smallest_local_batch = 0;
  std::int64_t pairs = 0;         // over every allocation
  std::int64_t most_workers = 0;  // M at the smallest local batch
  std::int64_t most_models = 1;   // n_max, the largest profiled
  std::int64_t work() const {
    const std::int64_t per_worker = pairs * most_models;  // at most 2^16 * 2^15 * 2^10
    return most_workers > std::numeric_limits<std::int64_t>::max() / std::max<std::int64_t>(1, per_worker)
               ? std::numeric_limits<std::int64_t>::max()
               : most_workers * per_worker;
  }
};

// Within kMaxHeteroAllocations (allocation_count() > 0), without listing the allocations:
// server i's digit runs over 0 .. P_i whatever the others', so its pairs over all of them
// are P_i (P_i + 1) / 2 times prod_{j != i} (P_j + 1).
SearchSize search_size(const JabasProfile& profile, std::int64_t global_batch) {
  SearchSize z;
  const std::int64_t count = allocation_count(profile);
  for (const JabasServer& s : profile.servers) {
    const std::int64_t p = s.gpus / 2;
    z.pairs += p * (p + 1) / 2 * (count / (p + 1));
    for (const auto& [lbs, batch] : s.by_local_batch) {
      if (z.smallest_local_batch == 0 || lbs < z.smallest_local_batch) z.smallest_local_batch = lbs;
      z.most_models = std::max<std::int64_t>(z.most_models, batch.max_workers);
    }
  }
  z.most_workers = z.smallest_local_batch > 0 ? global_batch / (2 * z.smallest_local_batch) : 0;
  return z;
}

}  // namespace

std::int64_t hetero_search_work(const JabasProfile& profile, std::int64_t global_batch) {
  if (allocation_count(profile) == 0) return std::numeric_limits<std::int64_t>::max();  // refused anyway
  return search_size(profile, global_batch).work();
}

std::vector<HeteroConfig> hetero_configs(const JabasProfile& profile, std::int64_t global_batch) {
  const std::vector<GpuAllocation> allocations = gpu_allocations(profile);
  // Bounded, so that a large --batch or many servers get an answer or this error, not hours.
  const SearchSize z = search_size(profile, global_batch);
  if (z.most_workers > kMaxGroupWorkers)
    throw Error(fmt::format("batch {}: the search would weigh up to {} workers per group (batch / (2 x local batch "
                            "{})), more than {}; give a smaller batch",
                            global_batch, z.most_workers, z.smallest_local_batch, kMaxGroupWorkers));
  if (z.work() > kMaxHeteroWork)
    throw Error(fmt::format("batch {}: the search would weigh up to {} workers per group (batch / (2 x local batch "
                            "{})) for each of {} GPU pairs over {} allocations and up to {} virtual workers a GPU, "
                            "more than {} steps; give a smaller batch or fewer servers",
                            global_batch, z.most_workers, z.smallest_local_batch, z.pairs, allocations.size(),
                            z.most_models, kMaxHeteroWork));
  std::vector<HeteroConfig> out;
  for (const GpuAllocation& a : allocations) out.push_back(best_hetero_config(profile, a, global_batch));
  return out;
}

}  // namespace morph
