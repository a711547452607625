#include "daemon/job_tracker.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"

namespace morph::daemon {
namespace {

std::int64_t seconds(double s) { return static_cast<std::int64_t>(std::floor(s)); }

}  // namespace

store::JobWait next_wait(const std::optional<store::JobWait>& last, const SlurmJob& job, double now_s) {
  const bool pending = job.phase == JobPhase::pending;
  double waited = 0;
  if (last) {
    waited = last->waited_s + (last->pending ? std::max(0.0, now_s - last->observed_at) : 0.0);
  } else {  // first seen: since its submission, up to its start if it runs
    waited = std::max(0.0, (pending ? now_s : job.start_time_s) - job.submit_time_s);
  }
  return {job.id, waited, now_s, pending};
}

store::PlanPeriod plan_period(std::uint32_t job, double from_s, const std::string& record) {
  const JobRecord r = parse_admin_comment(record);
  const double per_s =
      r.current.iter_ms > 0 ? static_cast<double>(r.request.global_batch) / (r.current.iter_ms / 1e3) : 0;
  return {job, seconds(from_s), record, r.current.gpu_type, r.current.nodes, r.current.gpus_per_node, per_s,
          std::nullopt};
}

void JobTracker::track(const ClusterSnapshot& snapshot) {
  std::vector<store::JobWait> waits;  // written at once: one transaction a round
  for (const SlurmJob& j : snapshot.jobs) {
    if (!is_job_record(j.admin_comment)) continue;
    if (j.phase == JobPhase::done) {
      ended_.insert(j.id);
      continue;
    }
    JobRecord r;
    try {
      r = parse_admin_comment(j.admin_comment);
    } catch (const Error&) {
      continue;  // the view builder says why
    }
    // Seen ended, now alive: requeued after its end, under the same id. Its unfinished
    // reconfiguration and its history stay; forgetting them could strand a job morphd holds.
    if (ended_.count(j.id)) {
      if (const std::optional<store::JobRow> row = state_.job(j.id);
          row && row->finished_at && row->user_uid == j.user_id && row->model == r.request.model)
        state_.reopen_job(j.id);
      ended_.erase(j.id);
    }
    if (!known_.count(j.id)) {
      // Its id may be an earlier job's: one that ended, or of another user or model.
      std::optional<store::JobRow> earlier = state_.job(j.id);
      if (earlier && (earlier->finished_at || earlier->user_uid != j.user_id || earlier->model != r.request.model)) {
        // Not while morphd reconfigures the id: the entry is what releases a job it held,
        // and it rolls back one planned on another job's record. Asked again each round.
        if (state_.unfinished_reconfiguration(j.id)) continue;
        state_.forget_job(j.id);
        earlier.reset();
      }
      if (!earlier)
        state_.record_job({j.id, r.request.model, r.request.global_batch, r.request.sla, j.user_id,
                           seconds(j.submit_time_s), std::nullopt});
      known_.insert(j.id);
      const std::vector<store::PlanPeriod> plans = state_.job_timeline(j.id);
      if (!plans.empty()) last_plan_[j.id] = plans.back().record;
      if (const std::optional<store::JobWait> w = state_.job_wait(j.id)) last_wait_[j.id] = *w;
    }
    const auto last = last_wait_.find(j.id);
    const store::JobWait wait = next_wait(last == last_wait_.end() ? std::nullopt : std::optional(last->second), j,
                                          snapshot.now_s);
    last_wait_[j.id] = wait;
    waits.push_back(wait);
    const bool running = j.phase == JobPhase::running || j.phase == JobPhase::finishing;
    if (!running || last_plan_[j.id] == j.admin_comment) continue;
    // A plan morphd journaled is recorded when its reconfiguration is done; one it did not
    // write (the submission's, an administrator's) from when the job started under it.
    const std::vector<store::PlanPeriod> plans = state_.job_timeline(j.id);
    if (plans.empty() || plans.back().record != j.admin_comment) {
      const double from = plans.empty() ? j.start_time_s : std::max(j.start_time_s, snapshot.now_s);
      state_.record_plan(plan_period(j.id, from, j.admin_comment));
    }
    last_plan_[j.id] = j.admin_comment;
  }
  state_.record_waits(waits);
  // Jobs Slurm no longer lists are forgotten here (a job under a reused id is new).
  std::set<std::uint32_t> listed;
  for (const SlurmJob& j : snapshot.jobs) listed.insert(j.id);
  std::erase_if(known_, [&](std::uint32_t id) { return !listed.count(id); });
  std::erase_if(ended_, [&](std::uint32_t id) { return !listed.count(id); });
  std::erase_if(last_plan_, [&](const auto& e) { return !listed.count(e.first); });
  std::erase_if(last_wait_, [&](const auto& e) { return !listed.count(e.first); });
}

}  // namespace morph::daemon
