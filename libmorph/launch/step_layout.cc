#include "libmorph/launch/step_layout.h"

#include <unistd.h>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/hostlist.h"
#include "libmorph/util/parse.h"

extern char** environ;

namespace morph::launch {
namespace {

const std::string* find(const Environment& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

const std::string& require(const Environment& env, const std::string& name) {
  const std::string* value = find(env, name);
  if (value == nullptr) throw Error(fmt::format("{} is not set: morphrun runs under srun (or give --plan and --hosts)", name));
  return *value;
}

int integer(const Environment& env, const std::string& name, int min, int max) {
  const std::string& value = require(env, name);
  return static_cast<int>(parse_int(value, fmt::format("{}={}", name, value), min, max));
}

// SLURM_STEP_TASKS_PER_NODE: "4(x2)" or "4,4" or "3(x2),2". Every node must run the same count.
int equal_tasks_per_node(const std::string& text, std::size_t nodes) {
  std::vector<int> counts;
  for (std::string_view group : split(text, ',')) {
    int repeat = 1;
    if (const auto open = group.find('('); open != std::string_view::npos) {
      if (group.size() < open + 4 || group.substr(open, 2) != "(x" || group.back() != ')')
        throw Error(fmt::format("SLURM_STEP_TASKS_PER_NODE={}: cannot read {}", text, quote(group)));
      repeat = static_cast<int>(parse_int(group.substr(open + 2, group.size() - open - 3), "SLURM_STEP_TASKS_PER_NODE", 1, 1 << 16));
      group = group.substr(0, open);
    }
    const int count = static_cast<int>(parse_int(group, "SLURM_STEP_TASKS_PER_NODE", 0, 1 << 16));
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), count);
  }
  if (counts.size() != nodes)
    throw Error(fmt::format("SLURM_STEP_TASKS_PER_NODE={} names {} nodes, the step has {}", text, counts.size(), nodes));
  for (int c : counts)
    if (c != counts.front())
      throw Error(fmt::format("SLURM_STEP_TASKS_PER_NODE={}: morphrun needs the same number of tasks on every node",
                              text));
  return counts.front();
}

std::vector<std::string> gpu_list(const Environment& env) {
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"})
    if (const std::string* value = find(env, name)) {
      std::vector<std::string> gpus;
      for (std::string_view gpu : split(*value, ',')) gpus.emplace_back(trim(gpu));
      return gpus;
    }
  return {};
}

}  // namespace

Environment process_environment() {
  Environment env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (const auto eq = text.find('='); eq != std::string_view::npos)
      env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

StepLayout slurm_step_layout(const Environment& env, bool per_node, int plan_gpus) {
  StepLayout s;
  s.job_id = static_cast<std::uint32_t>(integer(env, "SLURM_JOB_ID", 1, 0x7fffffff));
  if (const std::string* step = find(env, "SLURM_STEP_ID"))
    s.step_id = static_cast<std::uint32_t>(parse_int(*step, fmt::format("SLURM_STEP_ID={}", *step), 0, 0xffffffffLL));
  const std::string& nodelist = require(env, "SLURM_STEP_NODELIST");
  s.nodes = expand_hostlist(nodelist, "SLURM_STEP_NODELIST");
  const int step_nodes = integer(env, "SLURM_STEP_NUM_NODES", 1, 1 << 16);
  if (static_cast<std::size_t>(step_nodes) != s.nodes.size())
    throw Error(fmt::format("SLURM_STEP_NUM_NODES={} but SLURM_STEP_NODELIST={} names {} nodes", step_nodes, nodelist,
                            s.nodes.size()));
  s.job_nodes = find(env, "SLURM_JOB_NUM_NODES") ? integer(env, "SLURM_JOB_NUM_NODES", 1, 1 << 16) : step_nodes;
  s.node_rank = integer(env, "SLURM_NODEID", 0, step_nodes - 1);
  if (find(env, "SLURM_GPUS_ON_NODE")) s.gpus_on_node = integer(env, "SLURM_GPUS_ON_NODE", 0, 1 << 16);
  s.node_gpus = gpu_list(env);
  const int tasks = equal_tasks_per_node(require(env, "SLURM_STEP_TASKS_PER_NODE"), s.nodes.size());
  if (!per_node) {
    s.ranks_per_node = tasks;
    const int rank = integer(env, "SLURM_PROCID", 0, s.world_size() - 1);
    const int local = integer(env, "SLURM_LOCALID", 0, tasks - 1);
    if (rank != s.node_rank * tasks + local)
      throw Error(fmt::format("SLURM_PROCID={} is not task {} of node {}: morphrun needs block distribution "
                              "(srun -m block), so that a node's ranks are consecutive",
                              rank, local, s.node_rank));
    s.ranks = {rank};
    return s;
  }
  if (tasks != 1)
    throw Error(fmt::format("--per-node needs one task per node (srun --ntasks-per-node=1), the step runs {}", tasks));
  if (plan_gpus % step_nodes != 0)
    throw Error(fmt::format("--per-node: the plan's {} GPUs do not split evenly over the step's {} nodes", plan_gpus,
                            step_nodes));
  s.ranks_per_node = plan_gpus / step_nodes;
  for (int local = 0; local < s.ranks_per_node; ++local) s.ranks.push_back(s.node_rank * s.ranks_per_node + local);
  return s;
}

void check_mpi_trainer_tasks(const StepLayout& step) {
  if (step.ranks.size() <= 1) return;
  throw Error(fmt::format("--per-node with --mpi-trainer: this task would start {} trainer ranks, but srun --mpi=pmix "
                          "makes each task one MPI process (one PMIX_RANK), which its trainers cannot share; run one "
                          "task per rank (srun --ntasks-per-node={}, without --per-node)",
                          step.ranks.size(), step.ranks_per_node));
}

StepLayout host_step_layout(const std::vector<std::string>& hosts, int node_rank, int plan_gpus) {
  if (hosts.empty()) throw Error("--hosts: no host given");
  if (node_rank < 0 || static_cast<std::size_t>(node_rank) >= hosts.size())
    throw Error(fmt::format("--node-rank {} is not an index of the {} hosts of --hosts", node_rank, hosts.size()));
  if (plan_gpus % static_cast<int>(hosts.size()) != 0)
    throw Error(fmt::format("--plan: {} GPUs do not split evenly over the {} hosts of --hosts", plan_gpus, hosts.size()));
  StepLayout s;
  s.nodes = hosts;
  s.node_rank = node_rank;
  s.job_nodes = static_cast<int>(hosts.size());
  s.ranks_per_node = plan_gpus / static_cast<int>(hosts.size());
  for (int local = 0; local < s.ranks_per_node; ++local) s.ranks.push_back(node_rank * s.ranks_per_node + local);
  return s;
}

void check_plan_fits(const ExecutionPlan& plan, const Placement* placement, const StepLayout& step) {
  const std::string wanted =
      placement != nullptr
          ? fmt::format("the plan ({}) on {}", to_string(plan), describe(*placement))
          : fmt::format("the plan ({}) on {} GPUs", to_string(plan), plan.gpus());
  const auto mismatch = [&](const std::string& what) {
    return Error(fmt::format("{} does not match the allocation: {}", wanted, what));
  };
  const int step_nodes = static_cast<int>(step.nodes.size());
  if (placement != nullptr) {
    if (placement->nodes != step.job_nodes)
      throw mismatch(fmt::format("the job holds {} nodes (SLURM_JOB_NUM_NODES)", step.job_nodes));
    if (placement->nodes != step_nodes) throw mismatch(fmt::format("the step runs on {} nodes", step_nodes));
    if (step.gpus_on_node >= 0 && step.gpus_on_node != placement->gpus_per_node)
      throw mismatch(fmt::format("{} GPUs on this node (SLURM_GPUS_ON_NODE)", step.gpus_on_node));
    if (step.ranks_per_node != placement->gpus_per_node)
      throw mismatch(fmt::format("{} ranks per node, one per GPU is {}", step.ranks_per_node, placement->gpus_per_node));
  }
  if (step.world_size() != plan.gpus())
    throw mismatch(fmt::format("{} ranks ({} nodes x {}), dp*tp*pp = {}", step.world_size(), step_nodes,
                               step.ranks_per_node, plan.gpus()));
  if (plan.tp > step.ranks_per_node || step.ranks_per_node % plan.tp != 0)
    throw mismatch(fmt::format("tp={} does not fit inside a node of {} ranks", plan.tp, step.ranks_per_node));
  if (!step.node_gpus.empty() && step.node_gpus.size() != 1 &&
      step.node_gpus.size() != static_cast<std::size_t>(step.ranks_per_node))
    throw mismatch(fmt::format("{} GPUs visible on the node for {} ranks", step.node_gpus.size(), step.ranks_per_node));
}

}  // namespace morph::launch
