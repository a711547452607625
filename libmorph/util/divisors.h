// Divisors of a batch: the micro-batch sizes that cut it evenly.
#pragma once

#include <cstdint>
#include <vector>

namespace morph {

// The divisors of n >= 1 in increasing order (those above INT_MAX left out).
std::vector<int> divisors(std::int64_t n);

// The largest divisor of n >= 1 that is at most cap >= 1.
std::int64_t largest_divisor_at_most(std::int64_t n, std::int64_t cap);

}  // namespace morph
