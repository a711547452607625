#include "libmorph/util/divisors.h"

#include <algorithm>
#include <climits>

namespace morph {

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> out;
  for (std::int64_t i = 1; i * i <= n; ++i) {
    if (n % i != 0) continue;
    if (i <= INT_MAX) out.push_back(static_cast<int>(i));
    if (i != n / i && n / i <= INT_MAX) out.push_back(static_cast<int>(n / i));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::int64_t largest_divisor_at_most(std::int64_t n, std::int64_t cap) {
  std::int64_t d = std::min(n, cap);
  while (n % d != 0) --d;
  return d;
}

}  // namespace morph
