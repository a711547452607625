#include "libmorph/planner/step_split.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace morph {
namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

// x with (a x) mod m = 1, for gcd(a, m) = 1 (extended Euclid).
std::int64_t inverse_mod(std::int64_t a, std::int64_t m) {
  std::int64_t r0 = m, r1 = a % m, s0 = 0, s1 = 1;
  while (r1 != 0) {
    const std::int64_t q = r0 / r1;
    r0 = std::exchange(r1, r0 - q * r1);
    s0 = std::exchange(s1, s0 - q * s1);
  }
  return ((s0 % m) + m) % m;
}

// Types k.. take `left` steps; a[k..] is the lexicographically first way, if any.
bool fill(std::size_t k, std::int64_t left, const std::vector<std::int64_t>& gpus,
          const std::vector<std::int64_t>& most, std::vector<std::int64_t>& a) {
  const std::size_t last = gpus.size() - 1;
  if (k == last) {
    if (left % gpus[k] != 0 || left / gpus[k] < 1 || left / gpus[k] > most[k]) return false;
    a[k] = left / gpus[k];
    return true;
  }
  std::int64_t least_after = 0, most_after = 0;  // what the types after k can take
  for (std::size_t j = k + 1; j <= last; ++j) {
    least_after += gpus[j];
    most_after += gpus[j] * most[j];
  }
  std::int64_t lo = std::max<std::int64_t>(1, ceil_div(left - most_after, gpus[k]));
  const std::int64_t hi = std::min(most[k], floor_div(left - least_after, gpus[k]));
  std::int64_t stride = 1;
  if (k + 1 == last) {
    // G_k a = left (mod G_last): a = r (mod G_last / g), and within [lo, hi] the last
    // type's a is in range, so the first such a is the answer.
    const std::int64_t g = std::gcd(gpus[k], gpus[last]);
    if (left % g != 0) return false;
    stride = gpus[last] / g;
    const std::int64_t r = (left / g % stride) * inverse_mod(gpus[k] / g % stride, stride) % stride;
    lo += ((r - lo) % stride + stride) % stride;
  }
  for (std::int64_t x = lo; x <= hi; x += stride) {
    a[k] = x;
    if (fill(k + 1, left - gpus[k] * x, gpus, most, a)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::int64_t> first_split(const std::vector<std::int64_t>& gpus, const std::vector<std::int64_t>& most,
                                      std::int64_t steps) {
  if (gpus.empty()) return {};
  std::int64_t g = 0;
  for (const std::int64_t n : gpus) g = std::gcd(g, n);
  std::vector<std::int64_t> a(gpus.size(), 0);
  if (steps % g != 0 || !fill(0, steps, gpus, most, a)) return {};
  return a;
}

std::vector<std::int64_t> least_slowest_split(const std::vector<std::int64_t>& gpus, std::int64_t most,
                                              std::int64_t steps,
                                              const std::function<double(std::size_t, std::int64_t)>& time) {
  const std::size_t types = gpus.size();
  const std::int64_t all = std::accumulate(gpus.begin(), gpus.end(), std::int64_t{0});
  // Type k takes at most what leaves one step to every other GPU.
  std::vector<std::int64_t> cap(types);
  for (std::size_t k = 0; k < types; ++k) cap[k] = std::min(most, (steps - (all - gpus[k])) / gpus[k]);
  // The splits with every time(k, a_k) <= t: a_k up to the largest a with time(k, a) <= t.
  auto within = [&](double t) {
    std::vector<std::int64_t> bound(types);
    for (std::size_t k = 0; k < types; ++k) {
      std::int64_t lo = 0, hi = std::max<std::int64_t>(0, cap[k]);
      while (lo < hi) {
        const std::int64_t mid = hi - (hi - lo) / 2;
        if (time(k, mid) <= t) lo = mid;
        else hi = mid - 1;
      }
      bound[k] = lo;
    }
    return first_split(gpus, bound, steps);
  };
  // The least slowest time T is some time(k, a): for the type that sets it, the least a
  // with a split within time(k, a) gives exactly T, and every other type's least gives more.
  double least = 0;
  bool found = false;
  for (std::size_t k = 0; k < types; ++k) {
    if (cap[k] < 1 || within(time(k, cap[k])).empty()) continue;
    std::int64_t lo = 1, hi = cap[k];
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (!within(time(k, mid)).empty()) hi = mid;
      else lo = mid + 1;
    }
    if (!found || time(k, lo) < least) least = time(k, lo);
    found = true;
  }
  return found ? within(least) : std::vector<std::int64_t>{};
}

}  // namespace morph
