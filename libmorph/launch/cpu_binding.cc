#include "libmorph/launch/cpu_binding.h"

#include <algorithm>
#include <map>
#include <set>

#include "libmorph/util/error.h"

namespace morph::launch {

std::vector<int> even_block(const std::vector<int>& cpus, int index, int count) {
  const auto n = static_cast<long>(cpus.size());
  if (n == 0 || count <= 0) return {};
  if (n < count) return {cpus[static_cast<std::size_t>(index * n / count)]};  // ranks share CPUs
  const long base = n / count, extra = n % count;
  const long begin = index * base + std::min<long>(index, extra);
  const long size = base + (index < extra ? 1 : 0);
  return {cpus.begin() + begin, cpus.begin() + begin + size};
}

std::vector<RankBinding> bind_ranks(const std::vector<GpuLocality>& gpus, const std::vector<int>& allowed_cpus,
                                    const std::vector<int>& rank_gpus) {
  if (allowed_cpus.empty()) throw Error("CPU binding: this step may use no CPU (empty affinity)");
  std::vector<int> allowed = allowed_cpus;
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  const std::set<int> allowed_set(allowed.begin(), allowed.end());

  // Per rank: the allowed CPUs local to its GPU (empty: fall back) and that GPU's NUMA node.
  const int ranks = static_cast<int>(rank_gpus.size());
  std::vector<std::vector<int>> local(static_cast<std::size_t>(ranks));
  std::vector<int> numa(static_cast<std::size_t>(ranks), -1);
  for (int r = 0; r < ranks; ++r) {
    const auto gpu = std::find_if(gpus.begin(), gpus.end(),
                                  [&](const GpuLocality& g) { return g.gpu_index == rank_gpus[static_cast<std::size_t>(r)]; });
    if (gpu == gpus.end()) continue;
    std::vector<int> cpus;
    for (int cpu : gpu->cpus)
      if (allowed_set.count(cpu)) cpus.push_back(cpu);
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    if (cpus.empty()) continue;
    local[static_cast<std::size_t>(r)] = std::move(cpus);
    numa[static_cast<std::size_t>(r)] = gpu->numa_node;
  }

  // Ranks that share a local CPU set split it; the others split all allowed CPUs.
  std::map<std::vector<int>, std::vector<int>> sharers;  // CPU set -> ranks, in rank order
  for (int r = 0; r < ranks; ++r)
    if (!local[static_cast<std::size_t>(r)].empty()) sharers[local[static_cast<std::size_t>(r)]].push_back(r);

  std::vector<RankBinding> bindings(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    RankBinding& b = bindings[static_cast<std::size_t>(r)];
    const std::vector<int>& cpus = local[static_cast<std::size_t>(r)];
    if (cpus.empty()) {
      b.cpus = even_block(allowed, r, ranks);
      continue;
    }
    const std::vector<int>& group = sharers[cpus];
    const auto position = static_cast<int>(std::find(group.begin(), group.end(), r) - group.begin());
    b.cpus = even_block(cpus, position, static_cast<int>(group.size()));
    b.numa_node = numa[static_cast<std::size_t>(r)];
  }
  return bindings;
}

}  // namespace morph::launch
