// JABAS's configuration solver (seed 004 Algorithm 1, Eq. (7)) for one local batch: give
// each GPU of a group a number of virtual workers n_vsw and accumulation steps so that the
// group holds exactly M decoupled workers (sum of n_vsw * (n_GA + 1)) and the slowest GPU
// is as fast as possible.
//
// Exact, in O(N_H * n_max * M * log M): binary search on the bottleneck time T over the
// candidate times; for a given T each GPU's feasible worker counts are n_max arithmetic
// progressions {n, 2n, .., k_n(T) n}, so whether the GPUs can sum to M is a reachability
// pass of n_max sliding windows per GPU. Algorithm 1's DP and its pruning need O(N_H M^2).
#pragma once

#include <limits>
#include <vector>

namespace morph {

// One kind of GPU in the group and how many of it: with n virtual workers and n_GA extra
// accumulation steps an iteration takes fixed_ms[n - 1] + step_ms[n - 1] * n_GA
// (Eq. (6) is linear in n_GA), for n = 1 .. fixed_ms.size().
struct GpuKindTimes {
  std::vector<double> fixed_ms;
  std::vector<double> step_ms;  // > 0
  int count = 0;
};

struct GpuWorkers {
  int kind = 0;
  int workers = 0;    // n_vsw
  int ga_steps = 1;   // n_GA + 1
  double iter_ms = 0;
};

struct WorkerSplit {
  double iter_ms = std::numeric_limits<double>::infinity();  // the slowest GPU
  std::vector<GpuWorkers> gpus;                              // kind by kind, in input order
  bool feasible() const { return !gpus.empty(); }
};

// The split of `workers` (M) decoupled workers over the GPUs that minimises the slowest
// GPU's iteration time; infeasible (no GPUs) when M < the GPU count or M is out of reach.
WorkerSplit solve_worker_split(const std::vector<GpuKindTimes>& kinds, int workers);

}  // namespace morph
