#include "libmorph/perf/perf_params.h"

#include <fmt/format.h>

namespace morph {

namespace {

// The members in param::Index order.
constexpr std::array<double PerfParams::*, PerfParams::kCount> kMembers{
    &PerfParams::k_bwd,       &PerfParams::k_sync, &PerfParams::k_opt,     &PerfParams::k_opt_off,
    &PerfParams::k_off,       &PerfParams::k_swap, &PerfParams::k_const_ms, &PerfParams::k_dp,
    &PerfParams::k_mp,        &PerfParams::k_pcie, &PerfParams::k_net,     &PerfParams::k_opt_model,
    &PerfParams::k_const_off, &PerfParams::k_pipe, &PerfParams::k_fwd_mp,  &PerfParams::k_odd_ms,
    &PerfParams::k_stage_ms,
};

}  // namespace

std::array<double, PerfParams::kCount> PerfParams::to_array() const {
  std::array<double, kCount> values;
  for (std::size_t i = 0; i < kCount; ++i) values[i] = this->*kMembers[i];
  return values;
}

PerfParams PerfParams::from_array(const double* values) {
  PerfParams p;
  for (std::size_t i = 0; i < kCount; ++i) p.*kMembers[i] = values[i];
  return p;
}

const std::array<PerfParamInfo, PerfParams::kCount>& perf_param_info() {
  // In param::Index order. Overlap exponents: 1 is no overlap (sum), large is perfect overlap (max).
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
  const auto values = p.to_array();
  std::string text;
  for (std::size_t i = 0; i < PerfParams::kCount; ++i)
    text += fmt::format("{}{}={:.4g}", i ? " " : "", perf_param_info()[i].name, values[i]);
  return text;
}

}  // namespace morph
