#include "libmorph/plan/plan_features.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {

unsigned plan_features(const ExecutionPlan& p) {
  unsigned f = 0;
  if (p.zero_stage > 0 && !p.offload) f |= kFeatureZero;
  if (p.offload) f |= kFeatureOffload;
  if (p.tp > 1) f |= kFeatureTensor;
  if (p.pp > 1) f |= kFeaturePipeline;
  if (p.checkpointing) f |= kFeatureCheckpointing;
  return f;
}

unsigned parse_plan_features(const std::string& list, const std::string& what) {
  unsigned mask = 0;
  for (std::string_view item : split(list, ',')) {
    const std::string name = to_lower(trim(item));
    if (name == "all") mask |= kAllFeatures;
    else if (name == "zero") mask |= kFeatureZero;
    else if (name == "offload") mask |= kFeatureOffload;
    else if (name == "tp") mask |= kFeatureTensor;
    else if (name == "pp") mask |= kFeaturePipeline;
    else if (name == "3d") mask |= kFeatureTensor | kFeaturePipeline;
    else if (name == "gc") mask |= kFeatureCheckpointing;
    else if (name == "dp") {
    } else {
      throw Error(fmt::format("{}: unknown plan feature {} (expected dp, zero, offload, tp, pp, 3d, gc, all)",
                              what, quote(item)));
    }
  }
  return mask;
}

}  // namespace morph
