#include "daemon/store/sla_state.h"

#include "libmorph/policy/cluster_view.h"
#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"

namespace morph::store {

const char* to_string(SlaState state) {
  switch (state) {
    case SlaState::best_effort: return "best-effort";
    case SlaState::waiting: return "waiting";
    case SlaState::unmeasured: return "unmeasured";
    case SlaState::met: return "met";
    case SlaState::below_promise: return "below promise";
    case SlaState::unknown: break;
  }
  return "unknown";
}

SlaStatus sla_status(Sla sla, const PlanPeriod* plan, const std::optional<JobThroughput>& speed) {
  if (sla != Sla::guaranteed) return {SlaState::best_effort, 0};
  if (plan == nullptr) return {SlaState::waiting, 0};
  JobRecord r;
  try {
    r = parse_admin_comment(plan->record);
  } catch (const Error&) {
    return {SlaState::unknown, 0};
  }
  const Placement& request = r.baseline ? *r.baseline : r.current;
  SlaStatus out;
  out.promised_samples_per_s =
      request.iter_ms > 0 ? static_cast<double>(r.request.global_batch) / (request.iter_ms / 1e3) : 0;
  Placement now = r.current;
  now.iter_ms = request.iter_ms;
  const bool observed = speed && speed->observed_samples_per_s.has_value();
  const double observed_per_s = observed ? speed->observed_samples_per_s.value() : 0.0;
  if (now == request) out.state = SlaState::met;
  else if (!observed || out.promised_samples_per_s <= 0) out.state = SlaState::unmeasured;
  else if (observed_per_s >= out.promised_samples_per_s * (1 - policy::kPromiseTolerance)) out.state = SlaState::met;
  else out.state = SlaState::below_promise;
  return out;
}

}  // namespace morph::store
