#include "libmorph/launch/placeholders.h"

#include <array>

#include <fmt/format.h>

namespace morph::launch {
namespace {

constexpr std::array kPlaceholders{
    Placeholder{"framework", ValueType::text, "the framework's name"},
    Placeholder{"model", ValueType::text, "the model the job trains"},
    Placeholder{"dp", ValueType::integer, "data-parallel size"},
    Placeholder{"tp", ValueType::integer, "tensor-parallel size"},
    Placeholder{"pp", ValueType::integer, "pipeline-parallel size"},
    Placeholder{"gpus", ValueType::integer, "dp * tp * pp, the world size"},
    Placeholder{"nodes", ValueType::integer, "nodes of the allocation"},
    Placeholder{"gpus_per_node", ValueType::integer, "GPUs (ranks) per node"},
    Placeholder{"zero", ValueType::integer, "ZeRO stage 0-3"},
    Placeholder{"micro_batch_size", ValueType::integer, "samples per micro-batch and replica"},
    Placeholder{"ga", ValueType::integer, "micro-batches each DP rank runs per optimizer step"},
    Placeholder{"global_batch", ValueType::integer, "the job's global batch (samples per step)"},
    Placeholder{"seq", ValueType::integer, "sequence length"},
    Placeholder{"gc", ValueType::boolean, "gradient checkpointing"},
    Placeholder{"offload", ValueType::boolean, "ZeRO-Offload (optimizer on the CPU)"},
    Placeholder{"heterogeneous", ValueType::boolean,
                "GPU types with their own GA and workers (MORPH_GA per rank; the plan's ga is 1)"},
    Placeholder{"bf16", ValueType::boolean,
                "every GPU of the allocation computes in bfloat16 (morph.conf GpuType Bf16=); else fp16"},
    Placeholder{"precision", ValueType::text, "the 16-bit type the job trains in: bf16 or fp16"},
    Placeholder{"checkpoint", ValueType::boolean, "a checkpoint folder is given"},
    Placeholder{"resume", ValueType::boolean, "a checkpoint to resume from is given"},
    Placeholder{"checkpoint_dir", ValueType::text, "where the trainer saves"},
    Placeholder{"resume_dir", ValueType::text, "the checkpoint the trainer loads"},
    Placeholder{"config_dir", ValueType::text, "morphrun's private folder for generated files"},
    Placeholder{"config_file", ValueType::text, "the path of the rule's generated file"},
};

Value text_or_missing(const std::string& text, const char* missing) {
  if (text.empty()) return Value{std::monostate{}, missing};
  return Value{text, ""};
}

}  // namespace

std::span<const Placeholder> placeholders() { return kPlaceholders; }

const Placeholder* find_placeholder(std::string_view name) {
  for (const Placeholder& p : kPlaceholders)
    if (name == p.name) return &p;
  return nullptr;
}

std::string placeholder_names() {
  std::string names;
  for (const Placeholder& p : kPlaceholders) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  return names;
}

Values placeholder_values(const RenderContext& context, const std::string& framework,
                          const std::string& config_file) {
  const ExecutionPlan& plan = context.record.current.plan;
  const MorphRequest& request = context.record.request;
  auto integer = [](std::int64_t v) { return Value{v, ""}; };
  auto boolean = [](bool v) { return Value{v, ""}; };
  Values values{
      {"framework", Value{framework, ""}},
      {"model", text_or_missing(request.model, "the request names no model")},
      {"dp", integer(plan.dp)},
      {"tp", integer(plan.tp)},
      {"pp", integer(plan.pp)},
      {"gpus", integer(plan.gpus())},
      {"nodes", integer(context.record.current.nodes)},
      {"gpus_per_node", integer(context.record.current.gpus_per_node)},
      {"zero", integer(plan.zero_stage)},
      {"micro_batch_size", integer(plan.micro_batch_size)},
      // Plan: a DP rank runs ga_steps accumulation steps of `micro_batches` pipeline
      // micro-batches each (micro_batches is 1 without a pipeline).
      {"ga", integer(std::int64_t{plan.ga_steps} * plan.micro_batches)},
      {"global_batch", integer(request.global_batch)},
      {"seq", request.seq_len > 0 ? integer(request.seq_len)
                                  : Value{std::monostate{}, "the step has no sequence length (without a Morph "
                                                            "record, give morphrun --seq with --plan)"}},
      {"gc", boolean(plan.checkpointing)},
      {"offload", boolean(plan.offload)},
      {"heterogeneous", boolean(context.record.current.heterogeneous())},
      {"bf16", boolean(context.bf16)},
      {"precision", Value{std::string(context.bf16 ? "bf16" : "fp16"), ""}},
      {"checkpoint", boolean(!context.checkpoint_dir.empty())},
      {"resume", boolean(!context.resume_dir.empty())},
      {"checkpoint_dir", text_or_missing(context.checkpoint_dir, "no checkpoint folder was given")},
      {"resume_dir", text_or_missing(context.resume_dir, "no checkpoint to resume from was given")},
      {"config_dir", text_or_missing(context.config_dir, "no folder for generated files was given")},
      {"config_file", text_or_missing(config_file, "the rule declares no config_file")},
  };
  return values;
}

std::string value_text(const Value& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value.data)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&value.data)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&value.data)) return *s;
  return {};
}

}  // namespace morph::launch
