// StateStore: the reconfiguration journal (docs/state.md).
#include <fmt/format.h>

#include "daemon/store/state_store.h"
#include "libmorph/util/error.h"

namespace morph::store {
namespace {

constexpr const char* kJournalColumns = "id, job_id, path, state, from_record, to_record, started_at, updated_at";

JournalEntry read_entry(const Statement& row, const std::string& path) {
  JournalEntry e;
  e.id = row.column_int(0);
  e.job_id = static_cast<JobId>(row.column_int(1));
  const std::string what = fmt::format("{}: journal entry {}", path, e.id);
  e.path = parse_reconfiguration_path(row.column_text(2), what);
  e.state = parse_journal_state(row.column_text(3), what);
  e.from_record = row.column_text(4);
  e.to_record = row.column_text(5);
  e.started_at = row.column_int(6);
  e.updated_at = row.column_int(7);
  return e;
}

}  // namespace

std::int64_t StateStore::journal_begin(JobId job_id, ReconfigurationPath path, const std::string& from_record,
                                       const std::string& to_record, std::int64_t now) {
  const std::string operation = fmt::format("begin a reconfiguration of job {}", job_id);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  if (const std::optional<JournalEntry> e = unfinished_reconfiguration(job_id))
    throw Error(fmt::format("{}: {}: journal entry {} ({}) is still at {}; finish or roll it back first",
                            this->path(), operation, e->id, to_string(e->path), to_string(e->state)));
  db_.prepare("INSERT INTO journal (job_id, path, state, from_record, to_record, started_at, updated_at) "
              "VALUES (?1, ?2, 'planned', ?3, ?4, ?5, ?5)",
              operation)
      .bind_int(1, job_id)
      .bind_text(2, to_string(path))
      .bind_text(3, from_record)
      .bind_text(4, to_record)
      .bind_int(5, now)
      .run();
  const std::int64_t id = sqlite3_last_insert_rowid(db_.get());
  transaction.commit();
  return id;
}

void StateStore::journal_advance(std::int64_t id, JournalState state, std::int64_t now) {
  const std::string operation = fmt::format("advance journal entry {} to {}", id, to_string(state));
  Transaction transaction(db_, Transaction::Kind::write, operation);
  const JournalEntry e = journal_entry(id);
  check_journal_transition(e.path, e.state, state,
                           fmt::format("{}: journal entry {} (job {}, {})", path(), id, e.job_id, to_string(e.path)));
  db_.prepare("UPDATE journal SET state = ?2, updated_at = ?3 WHERE id = ?1", operation)
      .bind_int(1, id)
      .bind_text(2, to_string(state))
      .bind_int(3, now)
      .run();
  transaction.commit();
}

JournalEntry StateStore::journal_entry(std::int64_t id) const {
  const std::string operation = fmt::format("read journal entry {}", id);
  Statement row = db_.prepare(fmt::format("SELECT {} FROM journal WHERE id = ?1", kJournalColumns), operation);
  if (!row.bind_int(1, id).step()) throw Error(fmt::format("{}: {}: no such entry", path(), operation));
  return read_entry(row, path());
}

std::vector<JournalEntry> StateStore::unfinished_reconfigurations() const {
  Statement rows = db_.prepare(
      fmt::format("SELECT {} FROM journal WHERE state NOT IN ('done', 'rolled_back') ORDER BY id", kJournalColumns),
      "read the unfinished reconfigurations");
  std::vector<JournalEntry> entries;
  while (rows.step()) entries.push_back(read_entry(rows, path()));
  return entries;
}

std::optional<JournalEntry> StateStore::unfinished_reconfiguration(JobId job_id) const {
  Statement row = db_.prepare(
      fmt::format("SELECT {} FROM journal WHERE job_id = ?1 AND state NOT IN ('done', 'rolled_back')", kJournalColumns),
      fmt::format("read job {}'s unfinished reconfiguration", job_id));
  if (!row.bind_int(1, job_id).step()) return std::nullopt;
  return read_entry(row, path());
}

DoneReconfigurations StateStore::done_reconfigurations(JobId job_id) const {
  Statement row = db_.prepare(
      "SELECT MAX(updated_at), COALESCE(SUM(path <> 'start'), 0) FROM journal WHERE job_id = ?1 AND state = 'done'",
      fmt::format("read job {}'s reconfigurations", job_id));
  row.bind_int(1, job_id);
  DoneReconfigurations done;
  if (row.step()) {
    done.last_at = row.column_optional_int(0);
    done.restarts = static_cast<int>(row.column_int(1));
  }
  return done;
}

}  // namespace morph::store
