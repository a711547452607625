// GPU and host memory of a plan: Frenzy's MARP (seed 002, §IV-A) extended to ZeRO
// stages and their buckets, ZeRO-Offload, gradient checkpointing, 1F1B pipelines and
// framework overhead.
#pragma once

#include <cstdint>
#include <string>

#include "libmorph/cluster/allocation.h"
#include "libmorph/model/model_spec.h"
#include "libmorph/plan/plan.h"

namespace morph {

// How a framework keeps a parameter's training state.
enum class StateLayout {
  // Frenzy's 20 bytes (16-bit weights and gradients; fp32 master weights, momentum,
  // variance and gradient), partitioned by ZeRO's stages; ZeRO-1/2 reduce through
  // DeepSpeed's buckets. DeepSpeed, and the default.
  deepspeed,
  // Megatron-LM with --bf16 under its distributed optimizer (ZeRO-1): bf16 weights, fp32
  // gradients (its default accumulation) kept whole, fp32 master weights, momentum and
  // variance partitioned, reduced in the gradient buffer: 6 + 12/d bytes (Megatron-LM's
  // table of bytes per parameter; fp16 needs 4 + 16/d, no more). Without ZeRO, as
  // deepspeed: 20 bytes covers fp16's 20 and bf16's 18.
  megatron,
};

struct MemoryOptions {
  double gpu_overhead_bytes = 2.0 * (1 << 30);           // CUDA context, NCCL, allocator
  double host_overhead_bytes_per_gpu = 4.0 * (1 << 30);  // process, data loader
  StateLayout states = StateLayout::deepspeed;
};

// Bytes on the most loaded GPU (the first or last pipeline stage).
struct MemoryEstimate {
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double buckets_bytes = 0;       // ZeRO's buffers: 1/2's buckets (libmorph/plan/zero_buckets.h), 3's gathered layer
  double overhead_bytes = 0;
  double host_bytes_per_gpu = 0;  // offloaded optimizer states plus process overhead

  double gpu_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + buckets_bytes + overhead_bytes;
  }
};

MemoryEstimate estimate_memory(const ModelSpec& model, std::int64_t seq_len,
                               const ExecutionPlan& plan, const MemoryOptions& options);

struct MemoryFit {
  bool fits = true;
  std::string reason;             // why not, naming GPU type and sizes
  double gpu_bytes = 0;
  double gpu_capacity_bytes = 0;  // the smallest GPU of the allocation
  double host_bytes_per_node = 0; // the most loaded node
};

MemoryFit check_memory(const MemoryEstimate& estimate, const Allocation& allocation);

}  // namespace morph
