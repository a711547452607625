#include "libmorph/perf/perf_params.h"

#include <fmt/format.h>

namespace morph {

std::array<double, PerfParams::kCount> PerfParams::to_array() const {
  return {k_bwd, k_sync, k_opt, k_opt_off, k_off, k_swap, k_const_ms, k_dp, k_mp, k_pcie, k_net, k_opt_model, k_const_off, k_pipe, k_fwd_mp, k_odd_ms, k_stage_ms};
}

PerfParams PerfParams::from_array(const double* v) {
  return PerfParams{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16]};
}

const std::array<PerfParamInfo, PerfParams::kCount>& perf_param_info() {
  // Overlap exponents: 1 is no overlap (sum), large is perfect overlap (max).
  static const std::array<PerfParamInfo, PerfParams::kCount> info{{
      {"k_bwd", "x T_fwd", 0.5, 6.0},
      {"k_sync", "exponent", 1.0, 50.0},
      {"k_opt", "ms/Mparam", 0.0, 10.0},
      {"k_opt_off", "ms/Mparam/cpu", 0.0, 100.0},
      {"k_off", "exponent", 1.0, 50.0},
      {"k_swap", "exponent", 1.0, 50.0},
      {"k_const", "ms", 0.0, 1e4},
      {"k_dp", "x T_dp", 0.05, 50.0},
      {"k_mp", "x T_tp, T_pp", 0.05, 50.0},
      {"k_pcie", "x T_off", 0.05, 50.0},
      {"k_net", "x network time", 0.05, 50.0},
      {"k_opt_model", "ms/Mparam", 0.0, 10.0},
      {"k_const_off", "ms", 0.0, 1e4},
      {"k_pipe", "share of 1F1B", 0.0, 1.0},
      {"k_fwd_mp", "x T_fwd", 0.2, 5.0},
      {"k_odd", "ms", 0.0, 1e4},
      {"k_stage", "ms", 0.0, 1e4},
  }};
  return info;
}

double prior_floor(std::size_t i) {
  const PerfParamInfo& p = perf_param_info()[i];
  return 1e-3 * (p.upper - p.lower);
}

std::string to_string(const PerfParams& p) {
  return fmt::format("k_bwd={:.4g} k_sync={:.4g} k_opt={:.4g} k_opt_off={:.4g} k_off={:.4g} k_swap={:.4g} k_const={:.4g} "
                     "k_dp={:.4g} k_mp={:.4g} k_pcie={:.4g} k_net={:.4g} k_opt_model={:.4g} k_const_off={:.4g} "
                     "k_pipe={:.4g} k_fwd_mp={:.4g} k_odd={:.4g} k_stage={:.4g}",
                     p.k_bwd, p.k_sync, p.k_opt, p.k_opt_off, p.k_off, p.k_swap, p.k_const_ms, p.k_dp, p.k_mp,
                     p.k_pcie, p.k_net, p.k_opt_model, p.k_const_off, p.k_pipe, p.k_fwd_mp, p.k_odd_ms, p.k_stage_ms);
}

}  // namespace morph
