#include "libmorph/launch/cpu_binding.h"

#include <numeric>
#include <string>

#include <gtest/gtest.h>

#include "libmorph/launch/step_layout.h"
#include "libmorph/util/error.h"

namespace morph::launch {
namespace {

std::vector<int> range(int begin, int end) {
  std::vector<int> v(static_cast<std::size_t>(end - begin));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

// Two NUMA nodes of 8 CPUs; GPUs 0,1 near node 0 and GPUs 2,3 near node 1.
std::vector<GpuLocality> two_socket_gpus() {
  return {{0, 0, range(0, 8)}, {1, 0, range(0, 8)}, {2, 1, range(8, 16)}, {3, 1, range(8, 16)}};
}

TEST(CpuBinding, RanksSplitTheCpusLocalToTheirGpu) {
  const auto b = bind_ranks(two_socket_gpus(), range(0, 16), {0, 1, 2, 3});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].cpus, range(0, 4));
  EXPECT_EQ(b[1].cpus, range(4, 8));
  EXPECT_EQ(b[2].cpus, range(8, 12));
  EXPECT_EQ(b[3].cpus, range(12, 16));
  EXPECT_EQ(b[0].numa_node, 0);
  EXPECT_EQ(b[3].numa_node, 1);
}

TEST(CpuBinding, OnlyRanksOnTheSameLocalitySplitIt) {
  // One rank per NUMA node: each gets its whole node.
  const auto b = bind_ranks(two_socket_gpus(), range(0, 16), {1, 2});
  EXPECT_EQ(b[0].cpus, range(0, 8));
  EXPECT_EQ(b[1].cpus, range(8, 16));
}

TEST(CpuBinding, LocalCpusAreIntersectedWithTheAllowedOnes) {
  const auto b = bind_ranks(two_socket_gpus(), {2, 3, 4, 9, 10}, {0, 1, 2});
  EXPECT_EQ(b[0].cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(b[1].cpus, (std::vector<int>{4}));
  EXPECT_EQ(b[2].cpus, (std::vector<int>{9, 10}));
}

TEST(CpuBinding, UnknownLocalitySplitsAllAllowedCpusEvenly) {
  const auto b = bind_ranks({}, range(0, 10), {0, 1, 2, 3});
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].cpus, range(0, 3));
  EXPECT_EQ(b[1].cpus, range(3, 6));
  EXPECT_EQ(b[2].cpus, range(6, 8));
  EXPECT_EQ(b[3].cpus, range(8, 10));
  for (const auto& r : b) EXPECT_EQ(r.numa_node, -1);
}

TEST(CpuBinding, GpuWhoseLocalCpusAreNotAllowedFallsBack) {
  // GPU 2's CPUs (8..15) are outside the step's affinity.
  const auto b = bind_ranks(two_socket_gpus(), range(0, 8), {0, 2});
  EXPECT_EQ(b[0].cpus, range(0, 8));
  EXPECT_EQ(b[0].numa_node, 0);
  EXPECT_EQ(b[1].cpus, range(4, 8));  // block 1 of 2 of the allowed CPUs
  EXPECT_EQ(b[1].numa_node, -1);
}

TEST(CpuBinding, FewerCpusThanRanksShareButNeverEmpty) {
  const auto b = bind_ranks({}, {5, 7}, {0, 1, 2, 3, 4});
  ASSERT_EQ(b.size(), 5u);
  for (const auto& r : b) ASSERT_EQ(r.cpus.size(), 1u);
  EXPECT_EQ(b[0].cpus[0], 5);
  EXPECT_EQ(b[4].cpus[0], 7);
}

TEST(CpuBinding, UnsortedDuplicateAllowedCpusAreNormalised) {
  const auto b = bind_ranks({}, {3, 1, 2, 1, 0}, {0, 1});
  EXPECT_EQ(b[0].cpus, range(0, 2));
  EXPECT_EQ(b[1].cpus, range(2, 4));
}

TEST(CpuBinding, EmptyAffinityIsAnError) {
  EXPECT_THROW(bind_ranks(two_socket_gpus(), {}, {0}), Error);
}

// What srun gives task `local` of a one-node step of 4 tasks (GPUs 0-3, one each), plus
// the binding variables `more`.
Environment srun_task(int local, const Environment& more = {}) {
  Environment env{{"SLURM_JOB_ID", "7"},
                  {"SLURM_STEP_ID", "0"},
                  {"SLURM_STEP_NODELIST", "gpu-1"},
                  {"SLURM_STEP_NUM_NODES", "1"},
                  {"SLURM_NODEID", "0"},
                  {"SLURM_PROCID", std::to_string(local)},
                  {"SLURM_LOCALID", std::to_string(local)},
                  {"SLURM_STEP_TASKS_PER_NODE", "4"},
                  {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}};
  for (const auto& [name, value] : more) env[name] = value;
  return env;
}

// The one rank's binding of each of the 4 tasks, task i seeing affinity[i] on a node of
// 32 online CPUs (two_socket_gpus: the step holds CPUs 0-15 of it).
std::vector<RankBinding> each_tasks_rank(const std::vector<std::vector<int>>& affinity, const Environment& more = {}) {
  std::vector<RankBinding> ranks;
  for (int local = 0; local < 4; ++local) {
    const Environment env = srun_task(local, more);
    const StepLayout step = slurm_step_layout(env, false, 4);
    const std::vector<RankBinding> b =
        task_bindings(two_socket_gpus(), step, task_cpus(env, affinity[static_cast<std::size_t>(local)], 32));
    EXPECT_EQ(b.size(), 1u);
    ranks.push_back(b.at(0));
  }
  return ranks;
}

// The review's case: TaskPlugin=task/cgroup alone confines the step to its CPUs (fewer
// than the node's) but binds no task; every task's affinity is the whole step's set.
TEST(TaskCpus, UnderTaskCgroupAloneTheTasksSplitTheStepsCpusNearTheirGpus) {
  const std::vector<RankBinding> b = each_tasks_rank(std::vector<std::vector<int>>(4, range(0, 16)),
                                                     {{"SLURM_CPUS_PER_TASK", "4"}});
  EXPECT_EQ(b[0].cpus, range(0, 4));
  EXPECT_EQ(b[1].cpus, range(4, 8));
  EXPECT_EQ(b[2].cpus, range(8, 12));
  EXPECT_EQ(b[3].cpus, range(12, 16));
  EXPECT_EQ(b[1].numa_node, 0);
  EXPECT_EQ(b[2].numa_node, 1);
}

TEST(TaskCpus, MasksTaskAffinityGaveEachTaskAreEachRanksOwn) {
  // Whole cores of 2 threads for SLURM_CPUS_PER_TASK=1: 4 CPUs each could hold all 4
  // tasks' CPUs, but Slurm's list says each task has its own.
  const Environment bound{{"SLURM_CPUS_PER_TASK", "1"},
                          {"SLURM_CPU_BIND_TYPE", "mask_cpu:"},
                          {"SLURM_CPU_BIND_LIST", "0xF,0xF0,0xF00,0xF000"}};
  const std::vector<RankBinding> b = each_tasks_rank({range(0, 4), range(4, 8), range(8, 12), range(12, 16)}, bound);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b[static_cast<std::size_t>(i)].cpus, range(4 * i, 4 * i + 4)) << i;
}

TEST(TaskCpus, TasksSlurmBoundToTheSameSocketSplitIt) {
  const Environment sockets{{"SLURM_CPU_BIND_TYPE", "mask_cpu:"}, {"SLURM_CPU_BIND_LIST", "0xFF,0xFF,0xFF00,0xFF00"}};
  const std::vector<RankBinding> b = each_tasks_rank({range(0, 8), range(0, 8), range(8, 16), range(8, 16)}, sockets);
  EXPECT_EQ(b[0].cpus, range(0, 4));
  EXPECT_EQ(b[1].cpus, range(4, 8));
  EXPECT_EQ(b[2].cpus, range(8, 12));
  EXPECT_EQ(b[3].cpus, range(12, 16));
}

TEST(TaskCpus, WhichLocalTasksShareATasksCpus) {
  const std::vector<int> all{0, 1, 2, 3};
  const auto sharing = [](const Environment& env, const std::vector<int>& affinity, int local, int tasks = 4) {
    return tasks_sharing_cpus(task_cpus(env, affinity, 32), tasks, local);
  };
  // a. one task on the node (--per-node): its own.
  EXPECT_EQ(sharing({}, range(0, 32), 0, 1), std::vector<int>{0});
  // b. --cpu-bind=none: the step's, though 16 CPUs could not hold 4 tasks of 8.
  EXPECT_EQ(sharing({{"SLURM_CPU_BIND_TYPE", "none"}, {"SLURM_CPUS_PER_TASK", "8"}}, range(0, 16), 2), all);
  // c. task/affinity's "auto binding off": one mask, every task's.
  EXPECT_EQ(sharing({{"SLURM_CPU_BIND_TYPE", "mask_cpu:"}, {"SLURM_CPU_BIND_LIST", "0xFFFF"}}, range(0, 16), 3), all);
  // c. map_cpu: one CPU each, decimal or hex.
  EXPECT_EQ(sharing({{"SLURM_CPU_BIND_TYPE", "map_cpu:"}, {"SLURM_CPU_BIND_LIST", "0,1,0x2,3"}}, {2}, 2),
            std::vector<int>{2});
  // d. a list Slurm did not apply (task/cgroup alone, --cpu-bind=mask_cpu:...): counted.
  EXPECT_EQ(sharing({{"SLURM_CPU_BIND_TYPE", "mask_cpu:"}, {"SLURM_CPU_BIND_LIST", "0x1,0x2,0x4,0x8"}}, range(0, 16), 1),
            all);
  // d. an unreadable list: counted.
  EXPECT_EQ(sharing({{"SLURM_CPU_BIND_TYPE", "mask_cpu:"}, {"SLURM_CPU_BIND_LIST", "0xF,zz"}}, range(0, 4), 0), all);
  // d. task/none: all online CPUs, though they could not hold 4 tasks of 16.
  EXPECT_EQ(sharing({{"SLURM_CPUS_PER_TASK", "16"}}, range(0, 32), 1), all);
  // d. fewer CPUs than the tasks need together (--cpu-bind=rank): the task's own.
  EXPECT_EQ(sharing({{"SLURM_CPU_BIND_TYPE", "rank"}}, {1}, 1), std::vector<int>{1});
  EXPECT_EQ(sharing({{"SLURM_CPUS_PER_TASK", "4"}}, range(4, 8), 1), std::vector<int>{1});
  // An unreadable SLURM_CPUS_PER_TASK counts as 1.
  EXPECT_EQ(sharing({{"SLURM_CPUS_PER_TASK", "four"}}, range(0, 4), 1), all);
}

TEST(TaskCpus, PerNodeTaskSplitsItsCpusAmongTheNodesRanks) {
  const Environment env = srun_task(0, {{"SLURM_STEP_TASKS_PER_NODE", "1"}, {"SLURM_CPUS_PER_TASK", "16"}});
  const StepLayout step = slurm_step_layout(env, true, 4);
  ASSERT_EQ(step.ranks.size(), 4u);
  const std::vector<RankBinding> b = task_bindings(two_socket_gpus(), step, task_cpus(env, range(0, 16), 32));
  ASSERT_EQ(b.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b[static_cast<std::size_t>(i)].cpus, range(4 * i, 4 * i + 4)) << i;
}

}  // namespace
}  // namespace morph::launch
