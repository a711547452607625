#include "libmorph/perf/iteration_time.h"

#include <algorithm>

#include "libmorph/plan/state_bytes.h"

namespace morph {
namespace {

constexpr double kActivationBytes = 2;  // 16-bit activations

double ms(double bytes, double bandwidth_Bps) { return bytes > 0 ? bytes / bandwidth_Bps * 1e3 : 0; }

}  // namespace

bool has_odd_placement(const Allocation& a) {
  const auto odd = [](const NodeShare& n) { return n.gpus % 2 == 1; };
  return a.nodes.size() > 1 && std::any_of(a.nodes.begin(), a.nodes.end(), odd) && a.max_gpus_on_a_node() > 1;
}

double ring_factor(double members) { return 2 * (members - 1) / members; }

double placement_stall_factor(const Allocation& a) {
  if (has_odd_placement(a)) return ring_factor(a.max_gpus_on_a_node());
  // One GPU on every node: the ring factor of the node count over that of two nodes.
  if (a.nodes.size() > 1 && a.max_gpus_on_a_node() == 1) return ring_factor(static_cast<double>(a.nodes.size())) - 1;
  return 0;
}

double critical_path_samples(std::int64_t global_batch, const ExecutionPlan& p) {
  const double m = static_cast<double>(p.flush_micro_batches());
  // Morphling A.1: T_fwd = t_p g_p / p (m + p - 1) for PP, m the flush's micro-batches (all
  // a · m of a step: one bubble a step); linear in per-GPU batch and shard.
  return static_cast<double>(global_batch) / (static_cast<double>(p.dp) * p.tp * p.pp) *
         (m + p.pp - 1) / m;
}

double unpipelined_path_samples(std::int64_t global_batch, const ExecutionPlan& p) {
  return static_cast<double>(global_batch) / (static_cast<double>(p.dp) * p.tp);
}

IterationTerms iteration_terms(const Workload& w, const ExecutionPlan& p, const Allocation& a,
                               const ForwardModel& forward) {
  return iteration_terms(w, p, a, forward, comm_bandwidths(p, a));
}

IterationTerms iteration_terms(const Workload& w, const ExecutionPlan& p, const Allocation& a,
                               const ForwardModel& forward, const CommBandwidths& bw) {
  const double P = w.model.params;
  const double d = p.dp, t = p.tp, pp = p.pp;
  const double b = static_cast<double>(w.global_batch);
  const double s = static_cast<double>(w.seq_len);
  const double h = static_cast<double>(w.model.hidden);
  const double l = static_cast<double>(w.model.layers);

  IterationTerms x;
  // Morphling A.1's GA: a passes, the last overlapping the synchronisation; a pipeline
  // accumulates within its one flush, which is the iteration's one pass.
  x.ga_steps = p.pp > 1 ? 1 : p.ga_steps;
  x.checkpointing = p.checkpointing;
  x.forward_ms = forward.forward_ms(critical_path_samples(w.global_batch, p), a.min_gpu_speed());
  x.model_parallel = t * pp > 1;
  x.unpipelined_forward_ms = p.pp > 1 && p.flush_micro_batches() > 1
                                 ? forward.forward_ms(unpipelined_path_samples(w.global_batch, p), a.min_gpu_speed())
                                 : x.forward_ms;

  // Morphling A.1: V_dp = P 2(d-1) / (d t p); ZeRO-3 adds a parameter all-gather (1.5x).
  const double zero3 = p.zero_stage >= 3 ? 1.5 : 1.0;
  x.dp_ms = ms(kGradientBytes * P * ring_factor(d) / (t * pp) * zero3, bw.dp_Bps);
  // ZeRO-1/2 split the all-reduce: the gradients are reduce-scattered to their owners
  // in the backward pass, and after the step each owner all-gathers its updated 16-bit
  // parameters (ZeRO-3 gathers them in the passes, counted above). The reduce-scatter
  // (and offloading) runs bucket by bucket as the backward pass fills them; the last
  // bucket, at most kZeroBucketElements of a replica's P/(t p), only after it.
  if (p.zero_stage >= 1 && p.zero_stage <= 2) {
    x.dp_ms = x.gather_ms = x.dp_ms / 2;
    x.tail_share = std::min(1.0, kZeroBucketElements / (P / (t * pp)));
  }
  // Morphling A.1: V_tp = 4 * 2 (t-1) b s h l / (d t)
  x.tp_ms = ms(kActivationBytes * 8 * (t - 1) * b * s * h * l / (d * t), bw.tp_Bps);
  // Morphling A.1: V_pp = 2 p b s h / (d t); the t TP ranks of a stage send at once and
  // share their NICs (comm_bandwidths), so a stage's transfer does not shrink with t.
  x.pp_ms = pp > 1 ? ms(kActivationBytes * 2 * pp * b * s * h / (d * t), bw.pp_Bps) : 0;
  // A.1's 1F1B critical path holds m + p - 1 slots per flush, one flush an iteration.
  x.stage_passes = pp > 1 ? static_cast<double>(p.flush_micro_batches() + p.pp - 1) : 0;
  x.dp_net = d > 1 && bw.dp_crosses_nodes;
  x.tp_net = t > 1 && bw.tp_crosses_nodes;
  x.pp_net = pp > 1 && bw.pp_crosses_nodes;
  if (x.dp_net && !p.offload) x.odd_ring = placement_stall_factor(a);

  const double mparams = P / 1e6;
  x.offload = p.offload;
  // Morphling A.2: T_opt = k_opt P/x, x = t p for 3D and d for ZeRO-DP (d t p combined).
  x.opt_mparams = mparams / (t * pp) / (p.zero_stage >= 1 ? d : 1.0);
  if (p.offload) {
    const double cpus = std::max(1, a.min_cpus_per_gpu());
    // Morphling A.2: T_opt = k_opt_off P / (d c); T_off = P / (d B_pcie)
    x.opt_off_mparams_per_cpu = mparams / (d * t * cpus);
    x.model_mparams = mparams / (t * pp);
    x.off_ms = ms(kFp32Bytes * P / (d * t), bw.offload_Bps);  // "without mixed precision"
  }
  return x;
}

}  // namespace morph
