// Plan features: the families of execution plans a job, its framework or a cluster allows.
#pragma once

#include <string>

#include "libmorph/plan/plan.h"

namespace morph {

// Plan features a job may use (sbatch --morph-plans); a plan needs all of its features.
enum PlanFeature : unsigned {
  kFeatureZero = 1u << 0,           // ZeRO-DP stages 1-3
  kFeatureOffload = 1u << 1,        // ZeRO-Offload
  kFeatureTensor = 1u << 2,         // tp > 1
  kFeaturePipeline = 1u << 3,       // pp > 1
  kFeatureCheckpointing = 1u << 4,  // GC
  kFeatureShardedZero = 1u << 5,    // ZeRO-2/3 (gradients, at 3 weights, sharded): "zero" of --morph-plans
  kAllFeatures = (1u << 6) - 1,
};

// "zero,offload,tp,pp,gc" or "all" -> mask; names the bad item.
unsigned parse_plan_features(const std::string& list, const std::string& what);
unsigned plan_features(const ExecutionPlan& plan);

}  // namespace morph
