#include "daemon/job_histories.h"

#include <limits>
#include <optional>
#include <set>

#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"

namespace morph::daemon {

JobHistories read_histories(const store::StateStore& state, const ClusterSnapshot& snapshot, BatchHistories* batches,
                            int window) {
  BatchHistories whole;
  if (batches == nullptr) batches = &whole;
  std::set<store::JobId> adaptive_jobs;
  JobHistories histories;
  for (const SlurmJob& j : snapshot.jobs) {
    if (j.phase == JobPhase::done || !is_job_record(j.admin_comment) || !state.job(j.id)) continue;
    JobHistory h;
    h.plans = state.job_timeline(j.id);
    if (const std::optional<store::JobWait> w = state.job_wait(j.id)) h.waited_s = w->waited_s;
    auto read = [&](std::int64_t from, std::optional<std::int64_t> until) {
      for (store::Observation& o : state.observations(j.id, from, until, window))
        h.observations.push_back(std::move(o));
    };
    const std::optional<std::int64_t> first_plan =
        h.plans.empty() ? std::nullopt : std::optional(h.plans.front().from_time);
    read(std::numeric_limits<std::int64_t>::min(), first_plan);
    for (const store::PlanPeriod& p : h.plans) read(p.from_time, p.until_time);
    bool adaptive = false;
    try {
      adaptive = parse_admin_comment(j.admin_comment).request.adaptive_batch();
    } catch (const Error&) {
      // build_view says why the job is left out.
    }
    if (adaptive) {
      h.step_batches = batches->update(state, j.id);
      adaptive_jobs.insert(j.id);
    }
    histories[j.id] = std::move(h);
  }
  batches->keep_only(adaptive_jobs);
  return histories;
}

}  // namespace morph::daemon
