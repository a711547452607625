#include "libmorph/launch/rank_env.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::launch {

RankCoordinates rank_coordinates(const ExecutionPlan& plan, int rank) {
  // Megatron (ARCHITECTURE.md): rank = pp_rank*(t*d) + dp_rank*t + tp_rank.
  return {(rank / plan.tp) % plan.dp, rank % plan.tp, rank / (plan.tp * plan.dp)};
}

RankBatch rank_batch(const Placement& p, const std::string& gpu_type) {
  const ExecutionPlan& x = p.plan;
  if (!p.heterogeneous()) return {x.micro_batch_size * x.micro_batches, 1, x.ga_steps};
  const GpuGroup* g = find_group(p.groups, gpu_type);
  if (g == nullptr)
    throw Error(gpu_type.empty()
                    ? fmt::format("the plan is heterogeneous ({}) but morph.conf names no GPU type for this node "
                                  "(add its NodeName= line)",
                                  group_types(p.groups))
                    : fmt::format("this node's GPUs ({}) are in no group of the heterogeneous plan ({})", gpu_type,
                                  to_string(p.groups)));
  return {x.micro_batch_size, g->workers, g->ga_steps};
}

int master_port(std::uint32_t job_id, std::uint32_t step_id, const PortRange& ports) {
  if (step_id >= 0xfffffff0u) step_id = 0;  // SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT, ...
  const auto jobs = static_cast<std::uint32_t>((ports.high - ports.low + 1) / 8);  // >= 1 (morph.conf)
  return ports.low + static_cast<int>(job_id % jobs) * 8 + static_cast<int>(step_id % 8);
}

std::string rank_gpu(const StepLayout& step, int local) {
  if (step.node_gpus.size() == 1) return step.node_gpus.front();
  if (local >= 0 && static_cast<std::size_t>(local) < step.node_gpus.size())
    return step.node_gpus[static_cast<std::size_t>(local)];
  return std::to_string(local);
}

std::vector<std::pair<std::string, std::string>> rank_environment(const ExecutionPlan& plan, const StepLayout& step,
                                                                  int rank, const RankSettings& settings) {
  const int local = step.local_rank(rank);
  const RankCoordinates c = rank_coordinates(plan, rank);
  auto s = [](int v) { return std::to_string(v); };
  return {
      {"RANK", s(rank)},
      {"LOCAL_RANK", s(local)},
      {"WORLD_SIZE", s(step.world_size())},
      {"LOCAL_WORLD_SIZE", s(step.ranks_per_node)},
      {"GROUP_RANK", s(step.node_rank)},
      {"CROSS_RANK", s(step.node_rank)},
      {"MASTER_ADDR", settings.master_addr},
      {"MASTER_PORT", s(settings.master_port)},
      {"CUDA_VISIBLE_DEVICES", rank_gpu(step, local)},
      {"OMP_NUM_THREADS", s(settings.threads)},
      {"MORPH_DP_RANK", s(c.dp)},
      {"MORPH_TP_RANK", s(c.tp)},
      {"MORPH_PP_RANK", s(c.pp)},
      {"MORPH_LOCAL_BATCH", s(settings.batch.local_batch)},
      {"MORPH_WORKERS", s(settings.batch.workers)},
      {"MORPH_GA", s(settings.batch.ga_steps)},
  };
}

}  // namespace morph::launch
