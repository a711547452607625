// An execution plan (Morphling §3): 3D parallel sizes, ZeRO stage, ZeRO-Offload,
// gradient accumulation, gradient checkpointing and micro-batching. The global batch
// is dp * ga_steps * micro_batches * micro_batch_size and never changes across plans
// (but for a job of --morph-adaptive-batch: morphd plans it for the batch it forecasts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace morph {

struct ExecutionPlan {
  int dp = 1;                  // data-parallel size d
  int tp = 1;                  // tensor-parallel size t (inside one node)
  int pp = 1;                  // pipeline-parallel size p
  int zero_stage = 0;          // ZeRO-DP stage 0..3
  bool offload = false;        // ZeRO-Offload: optimizer states and step on the CPU
  bool checkpointing = false;  // gradient checkpointing (GC): recompute each layer
  int ga_steps = 1;            // gradient accumulation steps a
  int micro_batches = 1;       // micro-batches m per accumulation step, pp > 1 only
  int micro_batch_size = 1;    // samples per micro-batch and replica

  int gpus() const { return dp * tp * pp; }
  std::int64_t global_batch() const {
    return std::int64_t{dp} * ga_steps * micro_batches * micro_batch_size;
  }
  // Micro-batches of one 1F1B pipeline flush: with pp > 1 all a · m of a step, as
  // Megatron-LM (num_microbatches = global batch / (mbs · dp)) and DeepSpeed's pipeline
  // engine (gradient_accumulation_steps) run them; without a pipeline, m = 1.
  std::int64_t flush_micro_batches() const {
    return pp > 1 ? std::int64_t{ga_steps} * micro_batches : micro_batches;
  }
  // Table 2 families: "3d", "zero-dp", "zero-offload", "dp" (+ "+gc").
  std::string family() const;

  friend bool operator==(const ExecutionPlan&, const ExecutionPlan&) = default;
};

// One line, key=value, the form stored in a job's admin_comment and MORPH_PLAN:
// "dp=4 tp=4 pp=1 zero=1 offload=0 gc=0 ga=4 mb=1 mbs=8".
std::string to_string(const ExecutionPlan& plan);
// What a user reads of it (job_submit_morph's message): the sizes, offload and gc only
// when on, a pipeline's micro-batches and the accumulation steps when they are more than
// one or the plan has no pipeline, the micro-batch size: "dp=2 tp=2 pp=2 zero=0 mb=4 ga=2 mbs=1".
std::string brief(const ExecutionPlan& plan);

// The plan's family, as Morphling's Table 2 groups plans: DP, GC, ZeRO-DP+GA,
// ZeRO-Offload(+GC), TP+PP (dp = 1), DP+TP+PP.
std::string plan_family(const ExecutionPlan& plan);

// Inverse of to_string; strict (unknown or missing keys, bad values are errors).
ExecutionPlan parse_plan(std::string_view text, std::string_view what);

// The value of one of to_string's keys ("dp", ..., "mbs"; offload and gc 0 or 1), as a
// partial plan (--morph-plan "dp=4,tp=2") names it. Throws morph::Error for another key.
int plan_value(const ExecutionPlan& plan, std::string_view key);

// The plan running each replica's `per_replica` samples in micro-batches of `mbs`, a
// divisor of it. With pp > 1 they are pipelined in one flush (mb; Megatron-LM's
// num_microbatches), but where the plan accumulates single micro-batches (ga > 1, mb = 1),
// whose form it keeps; with pp = 1 they are accumulated (ga). The time and memory models
// see the same flush of ga · mb either way (flush_micro_batches). At most
// MORPH_MAX_PLAN_VALUE steps: the caller checks per_replica / mbs.
ExecutionPlan with_micro_batch_size(ExecutionPlan plan, std::int64_t per_replica, std::int64_t mbs);

// The plan with its layout (dp, tp, pp, ZeRO, pipeline micro-batches) running
// `global_batch` samples per step: the micro-batch size the largest divisor of the
// samples per micro-batch slot that is at most the plan's own, the accumulation steps
// the rest. A micro-batch's activations do not grow, but under pp > 1 the first stage
// holds min(ga · mb, pp) micro-batches in flight: a plan of fewer micro-batches than
// stages holds more of them at a larger batch (llama2-7b dp=2 pp=4 mb=1 mbs=4 at 8 and
// 32: 134 and 423 GiB); PlanOracle still trusts an adaptive job's request re-cut so, as
// the user's own plan. None when dp · micro_batches does not divide the batch.
std::optional<ExecutionPlan> with_global_batch(const ExecutionPlan& plan, std::int64_t global_batch);

// Structural invariants that hold for any plan (sizes >= 1, ZeRO 0..3, offload needs
// ZeRO >= 1 and pp == 1, pipeline micro-batches need pp > 1 ...). Throws morph::Error.
void validate_plan_shape(const ExecutionPlan& plan, std::string_view what);

}  // namespace morph
