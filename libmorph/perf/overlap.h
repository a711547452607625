// Overlap of two activities (Morphling A.3, after Qiao et al.).
#pragma once

#include <cmath>

namespace morph {

// Morphling A.3: f_overlap^k(x, y) = (x^k + y^k)^(1/k); x + y at k = 1, max(x, y) as k -> inf.
// Written as hi (1 + (lo/hi)^k)^(1/k) so that it neither overflows nor divides by zero.
// T is double or a Ceres Jet.
template <typename T, typename K>
T overlap(const T& x, const T& y, const K& k) {
  using std::pow;
  if (!(x > T(0))) return y;
  if (!(y > T(0))) return x;
  const T hi = x > y ? x : y;
  const T lo = x > y ? y : x;
  return hi * pow(T(1) + pow(lo / hi, k), T(1) / k);
}

}  // namespace morph
