// Reproducible random draws for the validation's experiments: one stream per named part
// (a workload, a family) under one seed, and a Fisher-Yates shuffle of its first items.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace morph {

// The seed of `stream`'s own draws under `seed`.
inline std::uint64_t stream_seed(std::uint64_t seed, const std::string& stream) {
  return seed * 0x9E3779B97F4A7C15ULL + std::hash<std::string>{}(stream);
}

// Puts a uniformly random choice of `n` of `items`, in random order, at their front.
template <typename T>
void shuffle_front(std::vector<T>& items, std::size_t n, std::mt19937_64& generator) {
  n = std::min(n, items.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::uniform_int_distribution<std::size_t> pick(i, items.size() - 1);
    std::swap(items[i], items[pick(generator)]);
  }
}

}  // namespace morph
