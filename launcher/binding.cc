#include "launcher/binding.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

#include "libmorph/launch/rank_env.h"
#include "libmorph/util/parse.h"
#include "profiler/topology.h"

namespace morph::launcher {
namespace {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

// The GPU index a rank's CUDA_VISIBLE_DEVICES names, when it is a number.
int gpu_index(const std::string& gpu) {
  try {
    return static_cast<int>(parse_int(gpu, "CUDA_VISIBLE_DEVICES", 0, 1 << 16));
  } catch (const std::exception&) {
    return -1;  // a UUID: no locality known
  }
}

}  // namespace

std::vector<launch::RankBinding> step_bindings(const launch::StepLayout& step) {
  std::vector<launch::GpuLocality> gpus;
  try {
    gpus = hw::gpu_locality(hw::load_topology(""));
  } catch (const std::exception&) {
    // No topology: an even split of the allowed CPUs.
  }
  const std::vector<int> allowed = allowed_cpus();
  // Slurm bound this task already (TaskPlugin=task/affinity or cgroup): its ranks share
  // the task's CPUs. Otherwise every task sees the whole node and takes its rank's share
  // of the split of all the node's ranks, so that tasks of one node never overlap.
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const bool bound_by_slurm = online > 0 && static_cast<long>(allowed.size()) < online;
  std::vector<int> node_gpus;
  for (int local = 0; local < step.ranks_per_node; ++local) node_gpus.push_back(gpu_index(launch::rank_gpu(step, local)));
  if (!bound_by_slurm) {
    const std::vector<launch::RankBinding> node = launch::bind_ranks(gpus, allowed, node_gpus);
    std::vector<launch::RankBinding> mine;
    for (int rank : step.ranks) mine.push_back(node.at(static_cast<std::size_t>(step.local_rank(rank))));
    return mine;
  }
  std::vector<int> rank_gpus;
  for (int rank : step.ranks) rank_gpus.push_back(node_gpus.at(static_cast<std::size_t>(step.local_rank(rank))));
  return launch::bind_ranks(gpus, allowed, rank_gpus);
}

void bind_this_process(const launch::RankBinding& binding) {
  try {
    hw::apply_binding(binding);
  } catch (const std::exception& e) {
    // A container may refuse memory binding: the rank runs unbound rather than not at all.
    std::fprintf(stderr, "morphrun: warning: %s; the rank runs without that binding\n", e.what());
  }
}

}  // namespace morph::launcher
