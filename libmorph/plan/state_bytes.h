// Bytes per parameter of mixed-precision training's state (Frenzy §IV-A: 20 in all),
// which the memory model holds and the iteration-time model moves. Both read them here.
#pragma once

namespace morph {

inline constexpr double kWeightBytes = 2;      // 16-bit weights
inline constexpr double kGradientBytes = 2;    // 16-bit gradients
inline constexpr double kOptimizerBytes = 16;  // fp32 master weights, momentum, variance and gradients
inline constexpr double kFp32Bytes = 4;        // one fp32 value

}  // namespace morph
