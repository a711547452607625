// Whether a job gets what its SLA promises, from what the state database holds
// (`morph status`). A guaranteed job is promised the speed of its own request (Morph's
// guarantee, libmorph/policy/cluster_view.h): running it, the promise is met by
// definition; elsewhere its observed samples/s are held against the request's predicted
// ones, with the policy's tolerance.
#pragma once

#include <optional>

#include "daemon/store/records.h"

namespace morph::store {

enum class SlaState { best_effort, waiting, unmeasured, met, below_promise, unknown };
const char* to_string(SlaState state);

struct SlaStatus {
  SlaState state = SlaState::unknown;
  double promised_samples_per_s = 0;  // a guaranteed job's request as predicted; 0: none
};

// `plan`: the job's last plan (none: it never ran); `speed`: job_throughput() of it.
SlaStatus sla_status(Sla sla, const PlanPeriod* plan, const std::optional<JobThroughput>& speed);

}  // namespace morph::store
