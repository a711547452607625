// The seven fittable parameters of the Morphling iteration-time model (seed 001,
// Table 5), with units chosen so that every value is of order one.
#pragma once

#include <array>
#include <string>

namespace morph {

struct PerfParams {
  double k_bwd = 2.0;      // T_bwd = k_bwd T_fwd
  double k_sync = 1.5;     // overlap exponent of backward and DP synchronisation
  double k_opt = 0.05;     // optimizer ms per million parameters updated on a GPU
  double k_opt_off = 2.0;  // ZeRO-Offload CPU optimizer ms per million parameters and CPU
  double k_off = 2.0;      // overlap exponent of DP synchronisation and offloading
  double k_swap = 2.0;     // overlap exponent of the CPU step and offloading
  double k_const_ms = 5.0; // constant per-iteration overhead

  static constexpr std::size_t kCount = 7;
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

std::string to_string(const PerfParams& params);

}  // namespace morph
