// The fittable parameters of the iteration-time model: the seven of Morphling (seed 001,
// Table 5), four effective-bandwidth factors, two ZeRO-Offload terms, the pipeline's
// overlap, the model-parallel forward factor, the odd-placement stall and the pipeline
// stage's cost per pass (docs/models.md, "Where the model departs from the appendix"),
// in units that keep values of order one.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace morph {

// Each parameter's place in PerfParams::to_array(), perf_param_info(), the `k` of
// combine() and a fit's `fitted`.
namespace param {
enum Index : std::size_t {
  kBwd, kSync, kOpt, kOptOff, kOff, kSwap, kConst, kDp, kMp, kPcie, kNet,
  kOptModel, kConstOff, kPipe, kFwdMp, kOdd, kStage,
  kCount
};
}  // namespace param

struct PerfParams {
  double k_bwd = 2.0;      // T_bwd = k_bwd T_fwd
  double k_sync = 1.5;     // overlap exponent of backward and DP synchronisation
  double k_opt = 0.05;     // optimizer ms per million parameters updated on a GPU
  double k_opt_off = 2.0;  // ZeRO-Offload CPU optimizer ms per million parameters and CPU
  double k_off = 2.0;      // overlap exponent of backward and offloaded synchronisation
  double k_swap = 2.0;     // overlap exponent of the CPU step and offloading
  double k_const_ms = 5.0; // constant per-iteration overhead
  // Measured over modelled transfer time, i.e. configured over effective bandwidth
  // (the artifact fits B_nvlink and B_pcie per model instead).
  double k_dp = 1.0;       // gradient synchronisation inside a node, T_dp
  double k_mp = 1.0;       // model-parallel activations, T_tp and T_pp
  double k_pcie = 1.0;     // ZeRO-Offload transfers, T_off
  double k_net = 1.0;      // any of these over the network between nodes
  double k_opt_model = 0.25; // ZeRO-Offload step ms per million parameters of the whole model
  double k_const_off = 0.0;  // ZeRO-Offload's own constant per-iteration overhead, ms
  double k_pipe = 1.0;       // share of 1F1B's overlap of micro-batches across stages
  double k_fwd_mp = 1.0;     // forward time of model-parallel plans over the profile's
  double k_odd_ms = 0.0;     // DP synchronisation across nodes with an odd GPU count on one, ms
  double k_stage_ms = 0.0;   // each stage pass on a pipeline's critical path, ms

  static constexpr std::size_t kCount = param::kCount;
  std::array<double, kCount> to_array() const;
  static PerfParams from_array(const double* values);
};

struct PerfParamInfo {
  const char* name;
  const char* unit;
  double lower;
  double upper;
};

// Names, units and the bounds the fitter keeps each parameter in.
const std::array<PerfParamInfo, PerfParams::kCount>& perf_param_info();

// The scale on which the fit's prior and the choice of informative rows measure
// parameter i: log(k + floor), the floor a thousandth of the range, so that k may reach 0.
double prior_floor(std::size_t i);

std::string to_string(const PerfParams& params);

}  // namespace morph
