// What the planner takes from a job's framework (--morph-framework): the plans its launch
// runs and how it keeps a parameter's training state. job_submit, morphd and morph plan
// alike.
#pragma once

#include <string>

#include "libmorph/memory/memory_model.h"
#include "libmorph/plan/plan_features.h"
#include "libmorph/request/morph_request.h"

namespace morph {

// What the framework's launch can run (its `refuse` rules in share/frameworks/, which
// tests/unit/framework_test.cc holds this to): Megatron-LM's distributed optimizer is
// ZeRO-1 only, without offloading.
unsigned framework_plan_features(Framework framework);

// The plan families a job may be given: its --morph-plans, its framework's, the
// cluster's AllowedPlans.
unsigned allowed_plan_features(const MorphRequest& request, const std::string& allowed_plans);

// The site's memory options with the framework's StateLayout.
MemoryOptions framework_memory(MemoryOptions site, Framework framework);

}  // namespace morph
