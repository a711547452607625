#include "libmorph/launch/cpu_binding.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>

#include "libmorph/launch/rank_env.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::launch {
namespace {

using CpuList = std::vector<int>;

CpuList sorted_unique(CpuList cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string_view without_hex_prefix(std::string_view text) {
  return text.starts_with("0x") || text.starts_with("0X") ? text.substr(2) : text;
}

// A mask_cpu entry ("0x3", "F0"): bit i is CPU i.
std::optional<CpuList> mask_cpus(std::string_view entry) {
  const std::string_view digits = without_hex_prefix(entry);
  if (digits.empty()) return std::nullopt;
  CpuList cpus;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    int nibble = 0;
    const char* digit = &digits[digits.size() - 1 - i];
    if (std::from_chars(digit, digit + 1, nibble, 16).ec != std::errc{}) return std::nullopt;
    for (int bit = 0; bit < 4; ++bit)
      if ((nibble >> bit) & 1) cpus.push_back(static_cast<int>(4 * i) + bit);
  }
  return sorted_unique(std::move(cpus));
}

// A map_cpu entry: one CPU number, decimal or 0x-hex (Slurm's get_cpuset).
std::optional<CpuList> mapped_cpu(std::string_view entry) {
  const bool hex = entry.starts_with("0x") || entry.starts_with("0X");
  const std::string_view digits = without_hex_prefix(entry);
  int cpu = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), cpu, hex ? 16 : 10);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || cpu < 0) return std::nullopt;
  return CpuList{cpu};
}

// The CPUs of each entry of SLURM_CPU_BIND_LIST (local task i takes entry i mod count);
// empty when the type names no mask_cpu or map_cpu list or an entry cannot be read.
std::vector<CpuList> listed_task_cpus(const TaskCpus& task) {
  const bool masks = task.bind_type.find("mask_cpu") != std::string::npos;
  const bool map = task.bind_type.find("map_cpu") != std::string::npos;
  if ((!masks && !map) || task.bind_list.empty()) return {};
  std::vector<CpuList> entries;
  for (std::string_view entry : split(task.bind_list, ',')) {
    std::optional<CpuList> cpus = masks ? mask_cpus(trim(entry)) : mapped_cpu(trim(entry));
    if (!cpus) return {};
    entries.push_back(std::move(*cpus));
  }
  return entries;
}

// The GPU index a rank's CUDA_VISIBLE_DEVICES names, when it is a number.
int gpu_index(const std::string& gpu) {
  try {
    return static_cast<int>(parse_int(gpu, "CUDA_VISIBLE_DEVICES", 0, 1 << 16));
  } catch (const Error&) {
    return -1;  // a UUID: no locality known
  }
}

}  // namespace

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
  const std::vector<int> allowed = sorted_unique(allowed_cpus);
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
    cpus = sorted_unique(std::move(cpus));
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

TaskCpus task_cpus(const Environment& env, std::vector<int> affinity, int online_cpus) {
  const auto value = [&](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string{} : it->second;
  };
  TaskCpus task;
  task.affinity = std::move(affinity);
  task.online_cpus = online_cpus;
  if (const std::string per_task = value("SLURM_CPUS_PER_TASK"); !per_task.empty()) {
    try {
      task.cpus_per_task = static_cast<int>(parse_int(per_task, "SLURM_CPUS_PER_TASK", 1, 1 << 20));
    } catch (const Error&) {
      // Slurm's own variable, not the user's to mend: counts as 1.
    }
  }
  task.bind_type = value("SLURM_CPU_BIND_TYPE");
  task.bind_list = value("SLURM_CPU_BIND_LIST");
  return task;
}

std::vector<int> tasks_sharing_cpus(const TaskCpus& task, int local_tasks, int local_id) {
  if (local_tasks <= 1) return {local_id};  // a
  std::vector<int> all(static_cast<std::size_t>(local_tasks));
  std::iota(all.begin(), all.end(), 0);
  if (task.bind_type.find("none") != std::string::npos) return all;  // b
  const CpuList affinity = sorted_unique(task.affinity);
  const std::vector<CpuList> listed = listed_task_cpus(task);
  const auto entry = [&](int id) -> const CpuList& { return listed[static_cast<std::size_t>(id) % listed.size()]; };
  if (!listed.empty() && !affinity.empty() &&
      std::includes(entry(local_id).begin(), entry(local_id).end(), affinity.begin(), affinity.end())) {  // c
    std::vector<int> sharers;
    for (int id : all)
      if (entry(id) == entry(local_id)) sharers.push_back(id);
    return sharers;
  }
  const long step_cpus = static_cast<long>(local_tasks) * std::max(1, task.cpus_per_task);  // d
  const auto seen = static_cast<long>(affinity.size());
  const bool step_set = seen >= step_cpus || (task.online_cpus > 0 && seen >= task.online_cpus);
  return step_set ? all : std::vector<int>{local_id};
}

std::vector<RankBinding> task_bindings(const std::vector<GpuLocality>& gpus, const StepLayout& step,
                                       const TaskCpus& task) {
  if (step.ranks.empty()) return {};
  const int ranks_per_task = static_cast<int>(step.ranks.size());  // one, or the node's with --per-node
  const int local_tasks = std::max(1, step.ranks_per_node / ranks_per_task);
  const int local_id = step.local_rank(step.ranks.front()) / ranks_per_task;
  std::vector<int> local_ranks, rank_gpus;  // of the tasks that share this task's CPUs
  for (int sharer : tasks_sharing_cpus(task, local_tasks, local_id))
    for (int i = 0; i < ranks_per_task; ++i) {
      local_ranks.push_back(sharer * ranks_per_task + i);
      rank_gpus.push_back(gpu_index(rank_gpu(step, local_ranks.back())));
    }
  const std::vector<RankBinding> shared = bind_ranks(gpus, task.affinity, rank_gpus);
  std::vector<RankBinding> mine;
  for (int rank : step.ranks) {
    const auto at = std::find(local_ranks.begin(), local_ranks.end(), step.local_rank(rank));
    mine.push_back(shared.at(static_cast<std::size_t>(at - local_ranks.begin())));
  }
  return mine;
}

}  // namespace morph::launch
