#include "libmorph/planner/framework_planning.h"

namespace morph {

unsigned framework_plan_features(Framework framework) {
  if (framework == Framework::megatron) return kAllFeatures & ~(kFeatureShardedZero | kFeatureOffload);
  return kAllFeatures;
}

unsigned allowed_plan_features(const MorphRequest& request, const std::string& allowed_plans) {
  return parse_plan_features(request.plans, "--morph-plans") & framework_plan_features(request.framework) &
         parse_plan_features(allowed_plans, "AllowedPlans");
}

MemoryOptions framework_memory(MemoryOptions site, Framework framework) {
  site.states = framework == Framework::megatron ? StateLayout::megatron : StateLayout::deepspeed;
  return site;
}

}  // namespace morph
