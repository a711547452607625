// The reconfiguration journal (docs/state.md): every step is written before morphd takes
// it, so that after a crash of morphd, of the job or of slurmctld the reconfiguration is
// finished or rolled back, never lost, never done twice. SQLite keeps it in morphd
// (daemon/store); a memory one serves the tests.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/reconfiguration.h"
#include "daemon/store/journal_state.h"

namespace morph::daemon {

// The steps are the store's (daemon/store/journal_state.h, docs/state.md): which a path
// takes, in which order.
using Step = store::JournalState;

// A decision kept for `morph explain`: each reconfiguration begun and each wait.
struct DecisionNote {
  std::uint32_t job = 0;
  std::string action;  // the reconfiguration's path, or "wait"
  std::string reason;
  std::vector<policy::Alternative> alternatives;
  double time_s = 0;
  std::uint32_t user_uid = 0;  // the job's user, as Slurm lists it: for a job the journal records first
};

struct JournalEntry {
  std::int64_t id = 0;
  Reconfiguration change;
  Step step = Step::planned;
  double started_s = 0;
  double updated_s = 0;  // when `step` was reached
};

class Journal {
 public:
  virtual ~Journal() = default;
  // Journals `change` and records its decision.
  virtual std::int64_t begin(const Reconfiguration& change, double now_s) = 0;
  // Throws morph::Error when the entry's path does not go from its step to `step`.
  virtual void advance(std::int64_t id, Step step, double now_s) = 0;
  virtual std::vector<JournalEntry> unfinished() const = 0;
  // When the job's last reconfiguration was done (0: never) and how many restarted it
  // (every path but start: ClusterView's JobState::restarts counts the same).
  struct Done {
    double last_s = 0;
    int restarts = 0;
  };
  virtual Done done(std::uint32_t job) const = 0;
  // A decision that starts no reconfiguration (a job left waiting); `record` is the job's
  // AdminComment, for a job the journal has not seen yet.
  virtual void record_decision(const DecisionNote& note, const std::string& record) = 0;
  // The reason of the last decision recorded on `job` ("": none).
  virtual std::string last_reason(std::uint32_t job) const = 0;
  // What the journal may stop holding in memory about jobs other than `listed` (those
  // Slurm still lists): their last reason, which last_reason reads again if asked.
  virtual void forget_jobs_except(const std::set<std::uint32_t>& listed) = 0;
};

class MemoryJournal : public Journal {
 public:
  std::int64_t begin(const Reconfiguration& change, double now_s) override;
  void advance(std::int64_t id, Step step, double now_s) override;
  std::vector<JournalEntry> unfinished() const override;
  Done done(std::uint32_t job) const override;
  void record_decision(const DecisionNote& note, const std::string& record) override;
  std::string last_reason(std::uint32_t job) const override;
  void forget_jobs_except(const std::set<std::uint32_t>&) override {}  // memory is all it has
  const std::map<std::int64_t, JournalEntry>& entries() const { return entries_; }
  const std::vector<DecisionNote>& decisions() const { return decisions_; }

 private:
  std::map<std::int64_t, JournalEntry> entries_;
  std::vector<DecisionNote> decisions_;  // oldest first
  std::map<std::uint32_t, std::string> last_reason_;
};

}  // namespace morph::daemon
