#include "libmorph/record/plan_env.h"

#include <algorithm>

namespace morph {

std::vector<std::pair<std::string, std::string>> plan_environment(const JobRecord& r) {
  const ExecutionPlan& p = r.current.plan;
  auto s = [](auto v) { return std::to_string(v); };
  std::vector<std::pair<std::string, std::string>> env = {
      {"MORPH_PLAN", to_string(p)},
      {"MORPH_DP", s(p.dp)},
      {"MORPH_TP", s(p.tp)},
      {"MORPH_PP", s(p.pp)},
      {"MORPH_ZERO", s(p.zero_stage)},
      {"MORPH_OFFLOAD", p.offload ? "1" : "0"},
      {"MORPH_GC", p.checkpointing ? "1" : "0"},
      {"MORPH_MICRO_BATCH", s(p.micro_batch_size)},
      {"MORPH_MICRO_BATCHES", s(p.micro_batches)},
      {"MORPH_GLOBAL_BATCH", s(r.request.global_batch)},
      {"MORPH_MODEL", r.request.model},
      {"MORPH_SEQ", s(r.request.seq_len)},
      {"MORPH_FRAMEWORK", to_string(r.request.framework)},
      {"MORPH_LOCAL_BATCH", s(p.micro_batch_size * p.micro_batches)},
      {"MORPH_GPU_TYPE", r.current.heterogeneous() ? group_types(r.current.groups) : r.current.gpu_type},
      {"MORPH_NODES", s(r.current.nodes)},
      {"MORPH_GPUS_PER_NODE", s(r.current.gpus_per_node)},
  };
  // A heterogeneous job's GA differs by GPU type: morphrun tells each rank its own.
  if (r.current.heterogeneous()) env.emplace_back("MORPH_GPU_GROUPS", to_string(r.current.groups));
  else env.emplace_back("MORPH_GA", s(p.ga_steps));
  // --morph-adaptive-batch: the trainer adapts MORPH_GLOBAL_BATCH within these bounds.
  if (r.request.adaptive_batch())
    env.emplace_back("MORPH_ADAPTIVE_BATCH", s(r.request.adaptive_min) + ":" + s(r.request.adaptive_max));
  return env;
}

std::vector<std::string> plan_variables_not_set(const JobRecord& record) {
  const std::vector<std::pair<std::string, std::string>> env = plan_environment(record);
  std::vector<std::string> absent;
  for (const char* name : {"MORPH_GA", "MORPH_GPU_GROUPS", "MORPH_ADAPTIVE_BATCH"})
    if (std::none_of(env.begin(), env.end(), [name](const auto& kv) { return kv.first == name; }))
      absent.emplace_back(name);
  return absent;
}

}  // namespace morph
