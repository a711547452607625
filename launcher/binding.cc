#include "launcher/binding.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

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

}  // namespace

std::vector<launch::RankBinding> step_bindings(const launch::StepLayout& step, const launch::Environment& env) {
  std::vector<launch::GpuLocality> gpus;
  try {
    gpus = hw::gpu_locality(hw::load_topology(""));
  } catch (const std::exception&) {
    // No topology: an even split of the allowed CPUs.
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const launch::TaskCpus task = launch::task_cpus(env, allowed_cpus(), online > 0 ? static_cast<int>(online) : 0);
  return launch::task_bindings(gpus, step, task);
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
