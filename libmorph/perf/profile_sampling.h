// The configurations `morph-profile job` measures to fit a model's iteration time
// (Morphling A.3): at least seven, three of them with ZeRO-Offload, chosen from the
// allocation at hand by a fixed rule (see choose_profile_configs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/model/model_spec.h"
#include "libmorph/plan/plan.h"

namespace morph {

inline constexpr int kProfileConfigs = 7;         // Morphling A.3: seven fittable parameters
inline constexpr int kProfileOffloadConfigs = 3;  // k_opt_off, k_off, k_swap

struct ProfileAllocation {
  int nodes = 1;
  int gpus_per_node = 1;
};

struct ProfileConfig {
  int nodes = 1;          // srun -N
  int gpus_per_node = 1;  // srun --ntasks-per-node
  ExecutionPlan plan;     // dp, tp, pp, zero_stage, offload; batching left at 1

  int gpus() const { return nodes * gpus_per_node; }
};

// "dp=4 tp=2 pp=1 zero=0 offload=0 on 1x8"
std::string describe(const ProfileConfig& config);

// The rule. GPU counts form a ladder: the whole allocation, then one node's GPUs halved
// down to 1 (8 nodes x 8: 64, 8, 4, 2, 1). In this order, skipping invalid or repeated
// configurations:
//  1. ZeRO-Offload (ZeRO-2, pure DP) on the first three counts that divide the batch;
//  2. plain DP on the first two such counts;
//  3. one TP plan: the largest count, the largest t > 1 dividing the heads and one node's
//     GPUs, the rest DP;
//  4. one PP plan: the largest count, the smallest p > 1 dividing the layers;
//  5. up to seven: plain DP on the other counts, then ZeRO-2 DP on every count, then TP
//     and PP as in 3-4 on the smaller counts.
// Valid: d t p = count; t divides the heads and one node's GPUs; p divides the layers; d
// divides `global_batch`. Throws morph::Error when fewer than seven distinct valid
// configurations, or fewer than three with ZeRO-Offload, exist.
std::vector<ProfileConfig> choose_profile_configs(const ModelSpec& model, std::int64_t global_batch,
                                                  const ProfileAllocation& allocation);

// Up to `count` further valid configurations, not in `chosen`, in the order of step 5,
// for checking a fitted model on configurations it was not fitted to.
std::vector<ProfileConfig> held_out_profile_configs(const ModelSpec& model, std::int64_t global_batch,
                                                    const ProfileAllocation& allocation,
                                                    const std::vector<ProfileConfig>& chosen, int count);

}  // namespace morph
