#include "daemon/store/state_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include "libmorph/perf/perf_store.h"
#include "libmorph/util/error.h"

namespace morph::store {
namespace {

// Creates an empty file (an empty SQLite database) readable and writable by its owner only,
// so that SQLite's -wal and -shm files, which copy its mode, are private too.
void create_private_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return;
  }
  if (errno != EEXIST) throw Error(fmt::format("{}: create the state database: {}", path, std::strerror(errno)));
}

void check_private_file(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    throw Error(fmt::format("{}: open the state database: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw Error(fmt::format("{}: open the state database: not a regular file", path));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    throw Error(fmt::format("{}: open the state database: group or others may write it (mode {:04o}); chmod 600 it",
                            path, st.st_mode & 07777));
}

// A database morphd wrote at this Morph's schema: never one of another program (schema
// version 0, which writing would fill with Morph's tables) nor of another Morph.
void require_current_schema(const Database& db, std::span<const Migration> migrations, std::string_view newer_hint,
                            std::string_view older_hint) {
  const int current = schema_version(db);
  const int latest = static_cast<int>(migrations.size());
  refuse_newer_schema(db, current, latest, newer_hint);
  if (current == 0)
    throw Error(fmt::format("{}: no state database morphd has written (schema version 0: an empty file or another "
                            "program's database)",
                            db.path()));
  if (current < latest)
    throw Error(fmt::format("{}: the state database has schema version {}, older than this Morph's {}; morphd "
                            "migrates it when this version of morphd starts ({})",
                            db.path(), current, latest, older_hint));
}

void configure_connection(const Database& db) {
  if (sqlite3_busy_timeout(db.get(), StateStore::kBusyTimeoutMs) != SQLITE_OK) db.fail("set the busy timeout");
  db.exec("PRAGMA foreign_keys = ON", "turn foreign keys on");
  Statement wal = db.prepare("PRAGMA journal_mode = WAL", "open the state database in WAL mode");
  if (!wal.step() || wal.column_text(0) != "wal")
    throw Error(fmt::format("{}: open the state database in WAL mode: SQLite kept journal mode {}", db.path(),
                            wal.column_text(0)));
}

}  // namespace

StateStore StateStore::open(const std::string& path) { return open(path, schema_migrations()); }

StateStore StateStore::open(const std::string& path, std::span<const Migration> migrations) {
  create_private_file(path);
  check_private_file(path);
  Database db = Database::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX);
  configure_connection(db);
  migrate(db, migrations);
  return StateStore(std::move(db));
}

StateStore StateStore::open_read_only(const std::string& path) { return open_read_only(path, schema_migrations()); }

StateStore StateStore::open_read_only(const std::string& path, std::span<const Migration> migrations) {
  check_private_file(path);
  Database db = Database::open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX);
  if (sqlite3_busy_timeout(db.get(), kBusyTimeoutMs) != SQLITE_OK) db.fail("set the busy timeout");
  require_current_schema(db, migrations, "read it with that version's morph", "this command only reads");
  return StateStore(std::move(db));
}

StateStore StateStore::open_existing(const std::string& path) {
  check_private_file(path);
  Database db = Database::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX);
  if (sqlite3_busy_timeout(db.get(), kBusyTimeoutMs) != SQLITE_OK) db.fail("set the busy timeout");
  // Before configure_connection: turning WAL on writes the file's header.
  require_current_schema(db, schema_migrations(), "change it with that version's morph",
                         "this command does not migrate");
  configure_connection(db);
  return StateStore(std::move(db));
}

int StateStore::schema_version() const { return morph::store::schema_version(db_); }

void StateStore::record_fitted_params(const FittedParams& fit) {
  const std::string operation = fmt::format("record the fitted parameters of {}", fit.model);
  std::string fitted_for;
  perf_model_from_json(fit.params_json, fmt::format("{}: {}", path(), operation), &fitted_for);
  if (fitted_for != fit.model)
    throw Error(fmt::format("{}: {}: the parameters were fitted for {}", path(), operation, fitted_for));
  if (!std::isfinite(fit.rmsle) || fit.rmsle < 0)
    throw Error(fmt::format("{}: {}: RMSLE {} is not a finite number >= 0", path(), operation, fit.rmsle));
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.prepare("INSERT INTO fitted_params (model, params_json, source, fitted_at, rmsle) VALUES (?1, ?2, ?3, ?4, ?5)",
              operation)
      .bind_text(1, fit.model)
      .bind_text(2, fit.params_json)
      .bind_text(3, fit.source)
      .bind_int(4, fit.fitted_at)
      .bind_real(5, fit.rmsle)
      .run();
  transaction.commit();
}

void StateStore::record_job(const JobRow& job) {
  const std::string operation = fmt::format("record job {}", job.job_id);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.prepare("INSERT INTO jobs (job_id, model, global_batch, sla, user_uid, submitted_at, finished_at) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
              operation)
      .bind_int(1, job.job_id)
      .bind_text(2, job.model)
      .bind_int(3, job.global_batch)
      .bind_text(4, to_string(job.sla))
      .bind_int(5, job.user_uid)
      .bind_int(6, job.submitted_at)
      .bind_optional_int(7, job.finished_at)
      .run();
  transaction.commit();
}

void StateStore::finish_job(JobId job_id, std::int64_t finished_at) {
  const std::string operation = fmt::format("record the end of job {}", job_id);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.prepare("UPDATE jobs SET finished_at = ?2 WHERE job_id = ?1", operation)
      .bind_int(1, job_id)
      .bind_int(2, finished_at)
      .run();
  if (sqlite3_changes(db_.get()) != 1) throw Error(fmt::format("{}: {}: no such job", path(), operation));
  transaction.commit();
  unpruned_.erase(job_id);  // an ended job reports no more
}

void StateStore::reopen_job(JobId job_id) {
  const std::string operation = fmt::format("record that job {} runs again", job_id);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.prepare("UPDATE jobs SET finished_at = NULL WHERE job_id = ?1", operation).bind_int(1, job_id).run();
  if (sqlite3_changes(db_.get()) != 1) throw Error(fmt::format("{}: {}: no such job", path(), operation));
  transaction.commit();
}

void StateStore::forget_job(JobId job_id) {
  unpruned_.erase(job_id);
  const std::string operation = fmt::format("forget job {}", job_id);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  if (const std::optional<JournalEntry> e = unfinished_reconfiguration(job_id))
    throw Error(fmt::format("{}: {}: its reconfiguration, journal entry {} ({}), is still at {}; the job is kept "
                            "until the entry is done or rolled back",
                            path(), operation, e->id, to_string(e->path), to_string(e->state)));
  delete_job_rows(job_id, operation);
  transaction.commit();
}

void StateStore::delete_job_rows(JobId job_id, const std::string& operation) {
  for (const char* table : {"size_caps", "job_waits", "job_plans", "observations", "decisions", "journal", "jobs"})
    db_.prepare(fmt::format("DELETE FROM {} WHERE job_id = ?1", table), operation).bind_int(1, job_id).run();
}

int StateStore::purge_ended_jobs(std::int64_t ended_before, int limit) {
  const std::string operation = fmt::format("purge the jobs that ended before {}", ended_before);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  Statement ended = db_.prepare(
      "SELECT job_id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?1 AND NOT EXISTS "
      "(SELECT 1 FROM journal WHERE journal.job_id = jobs.job_id AND state NOT IN ('done', 'rolled_back')) "
      "ORDER BY finished_at, job_id LIMIT ?2",
      operation);
  ended.bind_int(1, ended_before).bind_int(2, limit);
  std::vector<JobId> jobs;
  while (ended.step()) jobs.push_back(static_cast<JobId>(ended.column_int(0)));
  for (const JobId job : jobs) delete_job_rows(job, operation);
  transaction.commit();
  for (const JobId job : jobs) unpruned_.erase(job);
  return static_cast<int>(jobs.size());
}

void StateStore::record_waits(std::span<const JobWait> waits) {
  const std::string operation = fmt::format("record the waiting times of {} jobs", waits.size());
  Transaction transaction(db_, Transaction::Kind::write, operation);
  Statement replace = db_.prepare(
      "INSERT OR REPLACE INTO job_waits (job_id, waited_s, observed_at, pending) VALUES (?1, ?2, ?3, ?4)", operation);
  for (const JobWait& w : waits) {
    replace.bind_int(1, w.job_id).bind_real(2, w.waited_s).bind_real(3, w.observed_at);
    replace.bind_int(4, w.pending ? 1 : 0).run();
    replace.reset();
  }
  transaction.commit();
}

void StateStore::replace_size_caps(std::span<const SizeCapRow> caps) {
  const std::string operation = fmt::format("record the size caps of {} jobs", caps.size());
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.exec("DELETE FROM size_caps", operation);
  Statement insert = db_.prepare(
      "INSERT INTO size_caps (job_id, max_gpus, max_nodes, at_least) "
      "SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM jobs WHERE job_id = ?1)",
      operation);
  for (const SizeCapRow& c : caps) {
    insert.bind_int(1, c.job_id).bind_int(2, c.max_gpus).bind_int(3, c.max_nodes).bind_int(4, c.at_least ? 1 : 0).run();
    insert.reset();
  }
  transaction.commit();
}

void StateStore::record_plan(const PlanPeriod& plan) {
  const std::string operation = fmt::format("record a plan of job {}", plan.job_id);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.prepare("INSERT INTO job_plans (job_id, from_time, record, gpu_type, nodes, gpus_per_node, "
              "predicted_samples_per_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
              operation)
      .bind_int(1, plan.job_id)
      .bind_int(2, plan.from_time)
      .bind_text(3, plan.record)
      .bind_text(4, plan.gpu_type)
      .bind_int(5, plan.nodes)
      .bind_int(6, plan.gpus_per_node)
      .bind_real(7, plan.predicted_samples_per_s)
      .run();
  transaction.commit();
}

void StateStore::record_observations(std::span<const Observation> observations) {
  record_observations(observations, kMaxObservationsPerJob, kObservationPruneEvery);
}

void StateStore::record_observations(std::span<const Observation> observations, std::int64_t keep,
                                     std::int64_t prune_every) {
  const std::string operation = fmt::format("record {} throughput observations", observations.size());
  Transaction transaction(db_, Transaction::Kind::write, operation);
  // A step already recorded under its layout is a copy that morphrun sent again (schema v4).
  // A job's observations never go back in time, though the clock may (an NTP step): they
  // are read on in (time, id) order from the last one read (observations_after).
  Statement insert = db_.prepare("INSERT INTO observations (job_id, time, step, seconds, samples, layout) "
                                 "VALUES (?1, MAX(?2, COALESCE((SELECT MAX(time) FROM observations WHERE job_id = ?1), "
                                 "?2)), ?3, ?4, ?5, ?6) ON CONFLICT (job_id, step, layout) DO NOTHING",
                                 operation);
  for (const Observation& o : observations) {
    insert.bind_int(1, o.job_id).bind_int(2, o.time).bind_int(3, o.step).bind_real(4, o.seconds);
    insert.bind_int(5, o.samples).bind_text(6, o.layout).run();
    insert.reset();
  }
  std::set<JobId> due;
  for (const Observation& o : observations)
    if (std::int64_t& n = unpruned_[o.job_id]; ++n >= prune_every) {
      n = 0;
      due.insert(o.job_id);
    }
  for (const JobId job : due)  // its newest `keep`, in the order of the index observations_by_job
    db_.prepare("DELETE FROM observations WHERE id IN (SELECT id FROM observations WHERE job_id = ?1 "
                "ORDER BY time DESC, id DESC LIMIT -1 OFFSET ?2)",
                operation)
        .bind_int(1, job)
        .bind_int(2, keep)
        .run();
  transaction.commit();
}

int StateStore::expire_refit_points(double before_s) {
  const std::string operation = fmt::format("expire the refit points recorded before {:.0f}", before_s);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.prepare("DELETE FROM refit_points WHERE recorded_at < ?1", operation).bind_real(1, before_s).run();
  const int expired = sqlite3_changes(db_.get());
  transaction.commit();
  return expired;
}

void StateStore::record_refit_points(std::span<const RefitPointRow> points, int keep) {
  const std::string operation = fmt::format("record {} points of the online refit", points.size());
  if (keep < 1)
    throw Error(fmt::format("{}: {}: keep at least 1 point per configuration, not {}", path(), operation, keep));
  Transaction transaction(db_, Transaction::Kind::write, operation);
  Statement replace = db_.prepare(
      "INSERT OR REPLACE INTO refit_points (model, app, configuration, job, global_batch, seq_len, plan, allocation, "
      "iteration_s, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
      operation);
  Statement trim = db_.prepare(
      "DELETE FROM refit_points WHERE model = ?1 AND app = ?2 AND configuration = ?3 AND job NOT IN "
      "(SELECT job FROM refit_points WHERE model = ?1 AND app = ?2 AND configuration = ?3 "
      "ORDER BY recorded_at DESC, rowid DESC LIMIT ?4)",
      operation);
  for (const RefitPointRow& p : points) {
    replace.bind_text(1, p.model).bind_text(2, p.app).bind_text(3, p.configuration).bind_text(4, p.job);
    replace.bind_int(5, p.global_batch).bind_int(6, p.seq_len).bind_text(7, p.plan).bind_text(8, p.allocation);
    replace.bind_real(9, p.iteration_s).bind_real(10, p.recorded_at).run();
    replace.reset();
    trim.bind_text(1, p.model).bind_text(2, p.app).bind_text(3, p.configuration).bind_int(4, keep).run();
    trim.reset();
  }
  transaction.commit();
}

StateStore::Forgotten StateStore::forget_learnt(const std::string& model, const std::string& source) {
  const std::string operation = fmt::format("forget what the jobs of {} taught", model);
  Transaction transaction(db_, Transaction::Kind::write, operation);
  Forgotten forgotten;
  db_.prepare("DELETE FROM fitted_params WHERE model = ?1 AND source = ?2", operation)
      .bind_text(1, model)
      .bind_text(2, source)
      .run();
  forgotten.fitted_params = sqlite3_changes(db_.get());
  db_.prepare("DELETE FROM refit_points WHERE model = ?1", operation).bind_text(1, model).run();
  forgotten.refit_points = sqlite3_changes(db_.get());
  transaction.commit();
  return forgotten;
}

std::int64_t StateStore::record_decision(const Decision& decision) {
  const std::string operation = fmt::format("record a decision on job {}", decision.job_id);
  if (!nlohmann::json::accept(decision.alternatives_json) ||
      !nlohmann::json::parse(decision.alternatives_json).is_array())
    throw Error(fmt::format("{}: {}: the alternatives are not a JSON array", path(), operation));
  Transaction transaction(db_, Transaction::Kind::write, operation);
  db_.prepare("INSERT INTO decisions (time, job_id, action, reason, alternatives_json) VALUES (?1, ?2, ?3, ?4, ?5)",
              operation)
      .bind_int(1, decision.time)
      .bind_int(2, decision.job_id)
      .bind_text(3, decision.action)
      .bind_text(4, decision.reason)
      .bind_text(5, decision.alternatives_json)
      .run();
  const std::int64_t id = sqlite3_last_insert_rowid(db_.get());
  transaction.commit();
  return id;
}

}  // namespace morph::store
