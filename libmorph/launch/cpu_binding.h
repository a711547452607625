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
//
// Which ranks split a task's CPUs (task_bindings): under srun each task sees only its own
// affinity, and Slurm may or may not have bound the step's tasks of a node to CPUs of
// their own. task/affinity does, and says so: SLURM_CPU_BIND_TYPE=mask_cpu: with one mask
// per local task in SLURM_CPU_BIND_LIST (map_cpu: one CPU each). task/cgroup alone confines
// the step to its CPUs but leaves every task's affinity the whole step's set, and so do
// task/none and --cpu-bind=none. The tasks that Slurm gave the same CPUs split them:
//  a. one task on the node (--per-node, or one rank per node): its ranks split its CPUs;
//  b. SLURM_CPU_BIND_TYPE names none: all the node's tasks share the step's CPUs;
//  c. a mask_cpu/map_cpu list this task's affinity lies within (Slurm applied it): the
//     tasks whose entry (local id modulo the list's length) equals this task's share them
//     (one mask for all: task/affinity's "auto binding off");
//  d. otherwise (task/cgroup alone, task/none, a list Slurm did not apply): an affinity
//     that could hold every local task's CPUs (SLURM_CPUS_PER_TASK each, 1 when unset),
//     or all the node's online CPUs, is the step's set, shared by all; a smaller one is
//     this task's own.
#pragma once

#include <string>
#include <vector>

#include "libmorph/launch/step_layout.h"

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

// What a task sees of its CPUs.
struct TaskCpus {
  std::vector<int> affinity;  // sched_getaffinity: OS indices
  int online_cpus = 0;        // the node's (sysconf); 0 when unknown
  int cpus_per_task = 1;      // SLURM_CPUS_PER_TASK
  std::string bind_type;      // SLURM_CPU_BIND_TYPE: "mask_cpu:", "map_cpu:", "none", ...; "" when unset
  std::string bind_list;      // SLURM_CPU_BIND_LIST
};

// The Slurm variables of `env` with the task's affinity and the node's online CPUs. An
// unreadable SLURM_CPUS_PER_TASK counts as 1; an unreadable list as none (rule d).
TaskCpus task_cpus(const Environment& env, std::vector<int> affinity, int online_cpus);

// The node's local tasks (0 .. tasks-1, in local-id order) that split `task.affinity`, this
// task (`local_id`) among them: rules a-d above.
std::vector<int> tasks_sharing_cpus(const TaskCpus& task, int local_tasks, int local_id);

// One binding per rank of `step.ranks`, in that order: the local ranks of the tasks that
// share this task's CPUs split them by bind_ranks, each rank's GPU being rank_gpu's
// (a GPU named by UUID has no known locality).
std::vector<RankBinding> task_bindings(const std::vector<GpuLocality>& gpus, const StepLayout& step,
                                       const TaskCpus& task);

}  // namespace morph::launch
