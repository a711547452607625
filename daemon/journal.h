// The reconfiguration journal (docs/state.md): every step is written before morphd takes
// it, so that after a crash of morphd, of the job or of slurmctld the reconfiguration is
// finished or rolled back, never lost, never done twice. SQLite keeps it in morphd
// (daemon/store); a memory one serves the tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/reconfiguration.h"
#include "daemon/store/journal_state.h"

namespace morph::daemon {

// The steps are the store's (daemon/store/journal_state.h, docs/state.md): which a path
// takes, in which order.
using Step = store::JournalState;

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
  virtual std::int64_t begin(const Reconfiguration& change, double now_s) = 0;
  // Throws morph::Error when the entry's path does not go from its step to `step`.
  virtual void advance(std::int64_t id, Step step, double now_s) = 0;
  virtual std::vector<JournalEntry> unfinished() const = 0;
  // When the job's last reconfiguration was done (0: never).
  virtual double last_done_s(std::uint32_t job) const = 0;
};

class MemoryJournal : public Journal {
 public:
  std::int64_t begin(const Reconfiguration& change, double now_s) override;
  void advance(std::int64_t id, Step step, double now_s) override;
  std::vector<JournalEntry> unfinished() const override;
  double last_done_s(std::uint32_t job) const override;
  const std::map<std::int64_t, JournalEntry>& entries() const { return entries_; }

 private:
  std::map<std::int64_t, JournalEntry> entries_;
};

}  // namespace morph::daemon
