// Splitting a replica's accumulation steps over GPU types: sum_k G_k a_k = steps, with
// G_k the GPUs of type k and a_k >= 1 the steps each of them takes (JABAS, seed 004 §4).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace morph {

// The lexicographically first split with 1 <= a_k <= most[k]; empty when there is none.
std::vector<std::int64_t> first_split(const std::vector<std::int64_t>& gpus, const std::vector<std::int64_t>& most,
                                      std::int64_t steps);

// The split with the least max_k time(k, a_k) (the slowest group, JABAS Eq. 6), a_k <=
// most, for times nondecreasing in a_k; among equals the lexicographically first, which is
// what an exhaustive search in that order keeps. Empty when no split exists. It evaluates
// O(K^2 log^2 most) times, where the exhaustive search took minutes for three types.
std::vector<std::int64_t> least_slowest_split(const std::vector<std::int64_t>& gpus, std::int64_t most,
                                              std::int64_t steps,
                                              const std::function<double(std::size_t, std::int64_t)>& time);

}  // namespace morph
