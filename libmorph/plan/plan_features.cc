#include "libmorph/plan/plan_features.h"

#include <fmt/format.h>

#include "libmorph/request/option_check.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {

unsigned plan_features(const ExecutionPlan& p) {
  unsigned f = 0;
  if (p.zero_stage > 0 && !p.offload) f |= kFeatureZero;
  if (p.zero_stage > 1 && !p.offload) f |= kFeatureShardedZero;
  if (p.offload) f |= kFeatureOffload;
  if (p.tp > 1) f |= kFeatureTensor;
  if (p.pp > 1) f |= kFeaturePipeline;
  if (p.checkpointing) f |= kFeatureCheckpointing;
  return f;
}

unsigned parse_plan_features(const std::string& list, const std::string& what) {
  char error[256];
  if (morph_check_plan_features(what.c_str(), list.c_str(), error, sizeof error) != 0) throw Error(error);
  unsigned mask = 0;
  for (std::string_view item : split(list, ',')) {
    const std::string name = to_lower(trim(item));
    if (name == "all") mask |= kAllFeatures;
    else if (name == "zero") mask |= kFeatureZero | kFeatureShardedZero;
    else if (name == "offload") mask |= kFeatureOffload;
    else if (name == "tp") mask |= kFeatureTensor;
    else if (name == "pp") mask |= kFeaturePipeline;
    else if (name == "3d") mask |= kFeatureTensor | kFeaturePipeline;
    else if (name == "gc") mask |= kFeatureCheckpointing;
    // "dp" adds no feature: plain data parallelism is always allowed.
  }
  return mask;
}

}  // namespace morph
