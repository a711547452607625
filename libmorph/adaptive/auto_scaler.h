// JABAS's coarse-grained auto-scaling (seed 004 §6.3): before each epoch, for every GPU
// allocation (GPU pairs of each server, gpu_allocations()), the epoch time is the sum over
// the forecast trajectory of p iterations at each step's batch under that allocation's best
// configuration; the allocation with the least epoch time is used next epoch. A cost slack
// (Morph's, default 0: the paper's rule) trades a bounded slowdown for fewer GPUs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/hetero/hetero_search.h"

namespace morph {

struct AutoScaleOptions {
  int interval_iterations = 100;  // p: iterations per forecast step
  // Among the allocations within (1 + cost_slack) of the least epoch time, the one with
  // the fewest GPUs (then the fastest); 0 picks the fastest.
  double cost_slack = 0;

  // Ceres-style: false with a message naming the bad member.
  bool is_valid(std::string* error) const;
};

struct AllocationChoice {
  std::size_t index = 0;  // into each step's configurations
  std::vector<std::string> servers;
  std::vector<int> server_gpus;  // the GPUs taken of each of servers
  int gpus = 0;
  double epoch_s = 0;  // predicted, for the forecast steps
  double fastest_epoch_s = 0;
};

// configs_by_step[t]: the best configuration of every allocation at step t's forecast batch,
// in the same order for every t (as hetero_configs returns them). An allocation that cannot
// run some step's batch is not a candidate. Throws morph::Error when none can run every step
// or the steps disagree on the allocations.
AllocationChoice choose_allocation(const std::vector<std::vector<HeteroConfig>>& configs_by_step,
                                   const AutoScaleOptions& options);
// The same over shared step configurations: a forecast repeats its batches (one clamped at
// the bound, step after step), searched once each.
AllocationChoice choose_allocation(const std::vector<const std::vector<HeteroConfig>*>& configs_by_step,
                                   const AutoScaleOptions& options);

}  // namespace morph
