// Iteration time of a plan on an allocation: the Morphling appendix (seed 001), Eq. (1)
// T_iter = T_cc + T_oo + k_const.
//
// iteration_terms() computes every quantity that does not depend on the fitted
// parameters (forward time, communication times V/B, optimizer work, offload time);
// combine() applies the fitted parameters. The fitter evaluates combine() on Ceres jets
// over terms computed once per measured point.
#pragma once

#include <cstdint>

#include "libmorph/cluster/allocation.h"
#include "libmorph/model/model_spec.h"
#include "libmorph/perf/bandwidth.h"
#include "libmorph/perf/forward_model.h"
#include "libmorph/perf/overlap.h"
#include "libmorph/perf/perf_params.h"
#include "libmorph/plan/plan.h"
#include "libmorph/plan/zero_buckets.h"

namespace morph {

// What a job trains, independent of how: the model, the fixed global batch, the sequence.
struct Workload {
  ModelSpec model;
  std::int64_t global_batch = 0;
  std::int64_t seq_len = 0;
};

struct IterationTerms {
  double forward_ms = 0;          // a T_fwd, all accumulation steps of the iteration
  // The same if the pipeline overlapped no micro-batches across its stages: each passes
  // all p stages before the next enters (= forward_ms without micro-batches in flight).
  double unpipelined_forward_ms = 0;
  bool model_parallel = false;    // t p > 1
  int ga_steps = 1;               // a; 1 with p > 1 (the flush holds the plan's a m micro-batches)
  bool checkpointing = false;
  double dp_ms = 0;               // T_comm.dp = V_dp / B_dp
  double tp_ms = 0;               // T_comm.tp = V_tp / B_tp
  double pp_ms = 0;               // T_comm.pp = V_pp / B_pp
  double gather_ms = 0;           // ZeRO-1/2: all-gather of the updated parameters, V_dp / 2
  // ZeRO-1/2: the share of the synchronisation (and offloading) in the gradients' last
  // bucket, which starts only after the last backward pass (docs/models.md, "ZeRO").
  double tail_share = 0;
  bool dp_net = false;            // the group crosses nodes
  bool tp_net = false;
  bool pp_net = false;
  // The DP group crosses nodes and synchronises on the GPUs: placement_stall_factor,
  // which the stall k_odd multiplies (docs/models.md, "Odd placements"); else 0.
  double odd_ring = 0;
  // Stage passes on a pipeline's critical path, n + p - 1 with p > 1 (A.1's 1F1B slots of
  // one flush of n = a m micro-batches), each costing k_stage whatever it carries
  // (docs/models.md, "Pipelines"); else 0.
  double stage_passes = 0;
  bool offload = false;
  double opt_mparams = 0;         // P / x, million parameters updated by one GPU
  double opt_off_mparams_per_cpu = 0;  // P / (d c) for ZeRO-Offload
  double model_mparams = 0;       // P, for ZeRO-Offload's whole-model part of the step
  double off_ms = 0;              // T_off = P / (d B_pcie)
};

IterationTerms iteration_terms(const Workload& workload, const ExecutionPlan& plan,
                               const Allocation& allocation, const ForwardModel& forward);
// The same with the plan's bandwidths already known (they depend only on d, t, p).
IterationTerms iteration_terms(const Workload& workload, const ExecutionPlan& plan,
                               const Allocation& allocation, const ForwardModel& forward,
                               const CommBandwidths& bandwidths);

// More than one node, some with an odd number of GPUs, not one GPU on every node: the
// placements on which the artifact's ViT and T5 traces stall (docs/models.md, "Odd placements").
bool has_odd_placement(const Allocation& allocation);

// A ring all-reduce's traffic per member over its buffer, 2(n-1)/n (Morphling A.1's V_dp).
double ring_factor(double members);

// How much a data-parallel group across nodes stalls, in units of k_odd: the ring factor
// 2(g-1)/g of the fullest node (g GPUs) on odd placements; with one GPU on each of n
// nodes 2(n-1)/n - 1 = (n-2)/n, nothing on two; 0 on even placements and on one node.
double placement_stall_factor(const Allocation& allocation);

// Whole-model samples that one GPU pushes through its critical path per iteration:
// B / (d t p) scaled by the 1F1B fill and drain (n + p - 1) / n, n the micro-batches of
// the iteration's one flush (ExecutionPlan::flush_micro_batches).
double critical_path_samples(std::int64_t global_batch, const ExecutionPlan& plan);
// The same without overlap across stages: m p micro-batch stage times, B / (d t).
double unpipelined_path_samples(std::int64_t global_batch, const ExecutionPlan& plan);

template <typename T>
struct IterationTime {
  T forward_ms;   // a T_fwd
  T backward_ms;  // T_bwd of one accumulation step
  T cc_ms;        // T_cc, computation and communication
  T opt_ms;       // T_opt
  T oo_ms;        // T_oo, optimizer and offloading
  T iter_ms;      // Eq. (1)
};

// k: the parameters, indexed by param::Index.
template <typename T>
IterationTime<T> combine(const IterationTerms& x, const T* k) {
  const T& k_bwd = k[param::kBwd];
  const T& k_sync = k[param::kSync];
  const T& k_opt = k[param::kOpt];
  const T& k_opt_off = k[param::kOptOff];
  const T& k_off = k[param::kOff];
  const T& k_swap = k[param::kSwap];
  const T& k_const = k[param::kConst];
  const T& k_dp = k[param::kDp];
  const T& k_mp = k[param::kMp];
  const T& k_pcie = k[param::kPcie];
  const T& k_net = k[param::kNet];
  const T& k_opt_model = k[param::kOptModel];
  const T& k_const_off = k[param::kConstOff];
  const T& k_pipe = k[param::kPipe];
  const T& k_fwd_mp = k[param::kFwdMp];
  const T& k_odd = k[param::kOdd];
  const T& k_stage = k[param::kStage];
  // docs/models.md, "Fitted bandwidths": measured over modelled transfer times; a group
  // across nodes takes the network's factor.
  const T& k_dp_group = x.dp_net ? k_net : k_dp;
  const T t_dp = k_dp_group * T(x.dp_ms);
  const T t_gather = k_dp_group * T(x.gather_ms);
  const T t_mp = k_mp * ((x.tp_net ? k_net : T(1)) * T(x.tp_ms) + (x.pp_net ? k_net : T(1)) * T(x.pp_ms));
  const T t_off = k_pcie * T(x.off_ms);
  IterationTime<T> r;
  const double a = x.ga_steps;
  // Morphling A.1's 1F1B critical path, of which only the share k_pipe is realised
  // (docs/models.md, "Pipelines"): k_pipe = 1 is A.1, 0 runs micro-batches one at a time.
  // TP and PP plans run their kernels at k_fwd_mp times the profile's forward time
  // ("Model-parallel kernels").
  r.forward_ms = (x.model_parallel ? k_fwd_mp : T(1)) *
                 (k_pipe * T(x.forward_ms) + (T(1) - k_pipe) * T(x.unpipelined_forward_ms));
  const T fwd_step = r.forward_ms / T(a);
  // Morphling A.1: T_bwd = k_bwd T_fwd; GC recomputes one forward pass.
  r.backward_ms = (k_bwd + T(x.checkpointing ? 1.0 : 0.0)) * fwd_step;
  // Morphling A.1: T_cc = a T_fwd + (a-1) T_bwd + f^{k_sync}(T_bwd, T_dp) + T_tp + T_pp.
  // ZeRO-Offload overlaps the last backward pass with the synchronisation and with
  // moving the 16-bit gradients to the host, half of T_off's traffic, by k_off
  // (docs/models.md, "Offloading"). ZeRO's last gradient bucket follows the backward
  // pass instead of overlapping it, as Morph splits JABAS's Eq. (4) buckets ("ZeRO").
  const T sync = x.offload ? t_dp + T(0.5) * t_off : t_dp;
  const T last_step = overlap(r.backward_ms, T(1 - x.tail_share) * sync, x.offload ? k_off : k_sync) +
                      T(x.tail_share) * sync;
  // A pipeline adds k_stage per stage pass on its critical path ("Pipelines").
  r.cc_ms = r.forward_ms + T(a - 1) * r.backward_ms + last_step + t_mp + k_stage * T(x.stage_passes);
  if (x.offload) {
    // Morphling A.2: T_opt = k_opt_off P / (d c), plus a part that does not shrink with
    // d or c, k_opt_model P (docs/models.md, "Offloading"). The gradients were
    // synchronised and offloaded in T_cc, so T_oo overlaps the CPU step with moving the
    // updated 16-bit parameters back, the other half of T_off: f^{k_swap}(T_opt, T_off/2)
    // (A.2 writes f^{k_off}(T_dp, T_off) + f^{k_swap}(T_opt, T_off)).
    r.opt_ms = k_opt_off * T(x.opt_off_mparams_per_cpu) + k_opt_model * T(x.model_mparams);
    r.oo_ms = overlap(r.opt_ms, T(0.5) * t_off, k_swap) + t_gather;
  } else {
    // Morphling A.2: T_opt = k_opt P / x; T_oo = T_opt, and ZeRO-DP's owners then share
    // their updated parameters (docs/models.md, "ZeRO").
    r.opt_ms = k_opt * T(x.opt_mparams);
    r.oo_ms = r.opt_ms + t_gather;
  }
  // Morphling Eq. (1): T_iter = T_cc + T_oo + k_const, offloading's own constant and the
  // stall of odd placements, k_odd per unit of the ring factor (1 at two GPUs a node)
  r.iter_ms = r.cc_ms + r.oo_ms + k_const + (x.offload ? k_const_off : T(0)) + k_odd * T(x.odd_ring);
  return r;
}

inline IterationTime<double> predict_iteration(const IterationTerms& terms, const PerfParams& params) {
  const auto k = params.to_array();
  return combine(terms, k.data());
}

}  // namespace morph
