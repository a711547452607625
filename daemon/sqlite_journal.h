// morphd's journal in its state database (daemon/store): what a successor reads after a
// crash. Beginning a reconfiguration also records the job (when new) and the decision
// with its reason and alternatives; finishing one records the job's new plan for its
// timeline.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "daemon/journal.h"
#include "daemon/store/state_store.h"

namespace morph::daemon {

class SqliteJournal : public Journal {
 public:
  explicit SqliteJournal(store::StateStore& store) : store_(store) {}
  std::int64_t begin(const Reconfiguration& change, double now_s) override;
  void advance(std::int64_t id, Step step, double now_s) override;
  std::vector<JournalEntry> unfinished() const override;
  Done done(std::uint32_t job) const override;
  void record_decision(const DecisionNote& note, const std::string& record) override;
  std::string last_reason(std::uint32_t job) const override;
  void forget_jobs_except(const std::set<std::uint32_t>& listed) override;
  std::size_t reasons_in_memory() const { return last_reason_.size(); }  // tests

 private:
  // Records a job not recorded yet, with its user (`user_uid`, Slurm's: the job tracker
  // takes a row of another user for an earlier job under a reused id) and what its
  // record says.
  void record_job_once(std::uint32_t job, std::uint32_t user_uid, const std::string& record, double now_s);

  store::StateStore& store_;
  // Each listed job's last decision reason, read from the database at its first question.
  mutable std::map<std::uint32_t, std::string> last_reason_;
};

}  // namespace morph::daemon
