// morphd's journal in its state database (daemon/store): what a successor reads after a
// crash. Beginning a reconfiguration also records the job (when new) and the decision
// with its reason and alternatives; finishing one records the job's new plan for its
// timeline.
#pragma once

#include <map>
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

 private:
  void record_job_once(std::uint32_t job, const std::string& record, double now_s);

  store::StateStore& store_;
  // Each job's last decision reason, read from the database at its first question.
  mutable std::map<std::uint32_t, std::string> last_reason_;
};

}  // namespace morph::daemon
