#include "libmorph/memory/memory_model.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/plan/state_bytes.h"
#include "libmorph/plan/zero_buckets.h"

namespace morph {
namespace {

// Mixed-precision Adam: plan/state_bytes.h. Megatron-LM with --bf16: fp32 gradients
// beside the weights; master weights, momentum and variance in the optimizer.
constexpr double kMegatronOptimizerBytes = 12;
constexpr double kOffloadBufferBytes = 2;  // pinned 16-bit parameter buffer per offloaded parameter
constexpr double kZero3LayerBytesPerParam = 4;  // a gathered layer's 16-bit weights and gradients

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Frenzy §IV-A: activations of one layer and micro-batch b, s b h (10 + 24/t + 5 a s / (h t)).
double layer_activation_bytes(const ModelSpec& m, double s, double b, double t) {
  const double h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads);
  return s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
}

}  // namespace

MemoryEstimate estimate_memory(const ModelSpec& m, std::int64_t seq_len, const ExecutionPlan& p,
                               const MemoryOptions& options) {
  const double s = static_cast<double>(seq_len);
  const double b = p.micro_batch_size;
  const double d = p.dp;
  const double t = p.tp;
  const double h = static_cast<double>(m.hidden);
  const double layers_per_stage = static_cast<double>((m.layers + p.pp - 1) / p.pp);

  // Parameters on one GPU of the first stage: the (vocabulary-parallel) embedding and its
  // share of the layers, split by TP (Frenzy: 20W/t). The last stage holds the output
  // embedding instead, of the same size.
  const double params_gpu = (m.embedding_params() + layers_per_stage * m.params_per_layer()) / t;

  MemoryEstimate e;
  // ZeRO stage 1 partitions optimizer states by d, stage 2 also gradients, stage 3 also
  // weights; ZeRO-Offload keeps optimizer states (and the update) in host memory, and
  // moves each bucket of 16-bit gradients there as it is reduced: the GPU keeps its 16-bit
  // weights and the buckets (the ZeRO-Offload paper's 2M on the GPU, 13B on one V100;
  // DeepSpeed's estimate_zero2_model_states_mem_needs with cpu_offload).
  // Megatron's distributed optimizer (its ZeRO-1); without it, Frenzy's 20 bytes hold for
  // fp16 (20) and bf16 (18) alike.
  const bool megatron = options.states == StateLayout::megatron && p.zero_stage == 1;
  e.weights_bytes = params_gpu * kWeightBytes / (p.zero_stage >= 3 ? d : 1);
  e.gradients_bytes =
      p.offload ? 0 : params_gpu * (megatron ? kFp32Bytes : kGradientBytes) / (p.zero_stage >= 2 ? d : 1);
  e.optimizer_bytes = p.offload ? 0 : params_gpu * (megatron ? kMegatronOptimizerBytes : kOptimizerBytes) /
                                          (p.zero_stage >= 1 ? d : 1);
  e.host_bytes_per_gpu = options.host_overhead_bytes_per_gpu +
      (p.offload ? params_gpu * (kOptimizerBytes + kOffloadBufferBytes) / d : 0);

  // 1F1B (Morphling A.1's pipeline): stage i runs min(p - i - 1, n) warm-up forwards
  // (Megatron-LM's schedule), so holds min(p - i, n) of the flush's n micro-batches, the
  // first stage min(p, n), the last one.
  const double in_flight =
      p.pp > 1 ? static_cast<double>(std::min<std::int64_t>(p.flush_micro_batches(), p.pp)) : 1;
  const double full_layer = layer_activation_bytes(m, s, b, t);
  // GC keeps each layer's 16-bit input and recomputes one layer at a time.
  const double stored_layer = p.checkpointing ? 2 * s * b * h : full_layer;
  const double recompute = p.checkpointing ? full_layer : 0;
  // Cross-entropy logits in fp32 on the last stage (Korthikanti et al., §4.3).
  const double logits = 4 * s * b * static_cast<double>(m.vocab) / t;
  const double first_stage = layers_per_stage * in_flight * stored_layer + recompute;
  const double last_stage = layers_per_stage * stored_layer + recompute + logits;
  e.activations_bytes = p.pp > 1 ? std::max(first_stage, last_stage) : first_stage + logits;
  // ZeRO-1/2 reduce-scatter and all-gather through buckets, which overlap_comm multiplies.
  // ZeRO-3 gathers each layer's 16-bit weights whole before it runs and reduces its
  // gradients from a whole layer's: DeepSpeed's estimate_zero3_model_states_mem_needs
  // adds 4 bytes per parameter of the largest layer (the embedding or a transformer
  // layer, per TP shard) to the partitioned states.
  // Megatron's distributed optimizer reduce-scatters within its gradient buffer.
  if (p.zero_stage >= 1 && p.zero_stage <= 2 && !megatron) e.buckets_bytes = kZeroBucketBufferBytes;
  if (p.zero_stage >= 3)
    e.buckets_bytes = kZero3LayerBytesPerParam * std::max(m.embedding_params(), m.params_per_layer()) / t;
  e.overhead_bytes = options.gpu_overhead_bytes;
  return e;
}

MemoryFit check_memory(const MemoryEstimate& e, const Allocation& allocation) {
  MemoryFit fit;
  fit.gpu_bytes = e.gpu_bytes();
  fit.gpu_capacity_bytes = allocation.min_gpu_memory_bytes();
  for (const NodeShare& n : allocation.nodes) {
    const double host = e.host_bytes_per_gpu * n.gpus;
    fit.host_bytes_per_node = std::max(fit.host_bytes_per_node, host);
    if (fit.fits && fit.gpu_bytes > n.gpu.memory_bytes) {
      fit.fits = false;
      fit.reason = fmt::format("out of memory: {:.1f} GiB per GPU > {:.4g} GiB on {}", fit.gpu_bytes / kGiB,
                               n.gpu.memory_bytes / kGiB, n.gpu.name);
    }
    if (fit.fits && host > n.node_type.host_memory_bytes) {
      fit.fits = false;
      fit.reason = fmt::format("out of host memory: {:.0f} GiB > {:.0f} GiB on node type {}", host / kGiB,
                               n.node_type.host_memory_bytes / kGiB, n.node_type.name);
    }
  }
  return fit;
}

}  // namespace morph
