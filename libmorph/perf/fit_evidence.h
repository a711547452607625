// The measurements a performance model was fitted on (PerfModel::evidence), as saved in
// its JSON: each point's iteration terms, which hold everything the prediction needs
// but the parameters, and what was measured.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "libmorph/perf/perf_model.h"

namespace morph {

nlohmann::json evidence_to_json(const FitEvidence& evidence);
// `what` names the source in errors; throws on a missing, non-finite or out-of-range value.
FitEvidence evidence_from_json(const nlohmann::json& points, const std::string& what);

}  // namespace morph
