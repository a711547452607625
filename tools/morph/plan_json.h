// JSON forms of plans and plan options, shared by the subcommands' --json output.
#pragma once

#include <nlohmann/json.hpp>

#include "libmorph/planner/plan_search.h"

namespace morph::cli {

nlohmann::json to_json(const ExecutionPlan& plan);
nlohmann::json to_json(const PlanOption& option);

}  // namespace morph::cli
