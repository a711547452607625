#include "daemon/sqlite_journal.h"

#include "daemon/job_tracker.h"

#include <cmath>

#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"

namespace morph::daemon {
namespace {

std::int64_t seconds(double s) { return static_cast<std::int64_t>(std::floor(s)); }

}  // namespace

// A job morphd decides on is in the jobs table (JobTracker records it first in morphd).
void SqliteJournal::record_job_once(std::uint32_t job, std::uint32_t user_uid, const std::string& record,
                                    double now_s) {
  if (store_.job(job)) return;
  store::JobRow row;
  row.job_id = job;
  row.user_uid = user_uid;
  row.submitted_at = seconds(now_s);
  try {
    const JobRecord r = parse_admin_comment(record);
    row.model = r.request.model;
    row.global_batch = r.request.global_batch;
    row.sla = r.request.sla;
  } catch (const Error&) {
    // A record morphd could not read is never planned for; keep the row minimal.
  }
  store_.record_job(row);
}

std::int64_t SqliteJournal::begin(const Reconfiguration& change, double now_s) {
  record_job_once(change.job, change.user_uid, change.from_record, now_s);
  store_.record_decision({0, seconds(now_s), change.job, store::to_string(change.path), change.reason,
                          policy::alternatives_to_json(change.alternatives)});
  last_reason_[change.job] = change.reason;
  return store_.journal_begin(change.job, change.path, change.from_record, change.to_record, seconds(now_s));
}

void SqliteJournal::record_decision(const DecisionNote& note, const std::string& record) {
  record_job_once(note.job, note.user_uid, record, note.time_s);
  store_.record_decision({0, seconds(note.time_s), note.job, note.action, note.reason,
                          policy::alternatives_to_json(note.alternatives)});
  last_reason_[note.job] = note.reason;
}

std::string SqliteJournal::last_reason(std::uint32_t job) const {
  auto it = last_reason_.find(job);
  if (it == last_reason_.end()) {
    const std::optional<store::Decision> last = store_.latest_decision(job);
    it = last_reason_.emplace(job, last ? last->reason : std::string()).first;
  }
  return it->second;
}

void SqliteJournal::forget_jobs_except(const std::set<std::uint32_t>& listed) {
  std::erase_if(last_reason_, [&](const auto& e) { return !listed.count(e.first); });
}

void SqliteJournal::advance(std::int64_t id, Step step, double now_s) {
  store_.journal_advance(id, step, seconds(now_s));
  if (step != Step::done) return;
  const store::JournalEntry e = store_.journal_entry(id);
  try {
    store_.record_plan(plan_period(e.job_id, now_s, e.to_record));
  } catch (const Error&) {
    // The timeline misses this plan; the journal is complete.
  }
}

std::vector<JournalEntry> SqliteJournal::unfinished() const {
  std::vector<JournalEntry> out;
  for (const store::JournalEntry& e : store_.unfinished_reconfigurations())
    out.push_back(JournalEntry{e.id, Reconfiguration{e.job_id, e.path, e.from_record, e.to_record, {}}, e.state,
                               static_cast<double>(e.started_at), static_cast<double>(e.updated_at)});
  return out;
}

Journal::Done SqliteJournal::done(std::uint32_t job) const {
  const store::DoneReconfigurations d = store_.done_reconfigurations(job);
  return Done{static_cast<double>(d.last_at.value_or(0)), d.restarts};
}

}  // namespace morph::daemon
