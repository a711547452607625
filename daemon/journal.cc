#include "daemon/journal.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::daemon {

std::int64_t MemoryJournal::begin(const Reconfiguration& change, double now_s) {
  const std::int64_t id = entries_.empty() ? 1 : entries_.rbegin()->first + 1;
  entries_[id] = JournalEntry{id, change, Step::planned, now_s, now_s};
  decisions_.push_back(
      {change.job, store::to_string(change.path), change.reason, change.alternatives, now_s, change.user_uid});
  last_reason_[change.job] = change.reason;
  return id;
}

void MemoryJournal::advance(std::int64_t id, Step step, double now_s) {
  JournalEntry& e = entries_.at(id);
  store::check_journal_transition(e.change.path, e.step, step, fmt::format("journal entry {}", id));
  e.step = step;
  e.updated_s = now_s;
}

std::vector<JournalEntry> MemoryJournal::unfinished() const {
  std::vector<JournalEntry> out;
  for (const auto& [id, e] : entries_)
    if (e.step != Step::done && e.step != Step::rolled_back) out.push_back(e);
  return out;
}

Journal::Done MemoryJournal::done(std::uint32_t job) const {
  Done d;
  for (const auto& [id, e] : entries_) {
    if (e.change.job != job || e.step != Step::done) continue;
    d.last_s = std::max(d.last_s, e.updated_s);
    if (e.change.path != Path::start) ++d.restarts;
  }
  return d;
}

void MemoryJournal::record_decision(const DecisionNote& note, const std::string& /*record*/) {
  decisions_.push_back(note);
  last_reason_[note.job] = note.reason;
}

std::string MemoryJournal::last_reason(std::uint32_t job) const {
  const auto it = last_reason_.find(job);
  return it == last_reason_.end() ? std::string() : it->second;
}

}  // namespace morph::daemon
