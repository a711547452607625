#include "daemon/store/schema.h"

#include <fmt/format.h>

#include <array>
#include <string>

#include "libmorph/util/error.h"

namespace morph::store {
namespace {

// v1 (docs/state.md). Times are Unix seconds; job ids are Slurm's.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE fitted_params (
  id INTEGER PRIMARY KEY,
  model TEXT NOT NULL,
  params_json TEXT NOT NULL,
  source TEXT NOT NULL,
  fitted_at INTEGER NOT NULL,
  rmsle REAL NOT NULL CHECK (rmsle >= 0)
);
CREATE INDEX fitted_params_by_model ON fitted_params (model, fitted_at);

CREATE TABLE jobs (
  job_id INTEGER PRIMARY KEY CHECK (job_id > 0),
  model TEXT NOT NULL,
  global_batch INTEGER NOT NULL CHECK (global_batch > 0),
  sla TEXT NOT NULL CHECK (sla IN ('best-effort', 'guaranteed')),
  user_uid INTEGER NOT NULL CHECK (user_uid >= 0),
  submitted_at INTEGER NOT NULL,
  finished_at INTEGER
);

CREATE TABLE job_plans (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs (job_id),
  from_time INTEGER NOT NULL,
  record TEXT NOT NULL,
  gpu_type TEXT NOT NULL,
  nodes INTEGER NOT NULL CHECK (nodes > 0),
  gpus_per_node INTEGER NOT NULL CHECK (gpus_per_node > 0),
  predicted_samples_per_s REAL NOT NULL CHECK (predicted_samples_per_s >= 0)
);
CREATE INDEX job_plans_by_job ON job_plans (job_id, from_time);

CREATE TABLE observations (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs (job_id),
  time INTEGER NOT NULL,
  step INTEGER NOT NULL CHECK (step >= 0),
  seconds REAL NOT NULL CHECK (seconds > 0),
  samples INTEGER NOT NULL CHECK (samples > 0),
  layout TEXT NOT NULL
);
CREATE INDEX observations_by_job ON observations (job_id, time);

CREATE TABLE decisions (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  job_id INTEGER NOT NULL REFERENCES jobs (job_id),
  action TEXT NOT NULL,
  reason TEXT NOT NULL,
  alternatives_json TEXT NOT NULL
);
CREATE INDEX decisions_by_job ON decisions (job_id, time);

CREATE TABLE journal (
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES jobs (job_id),
  path TEXT NOT NULL CHECK (path IN ('start', 'inplace', 'shrink', 'requeue', 'preempt')),
  state TEXT NOT NULL CHECK (state IN ('planned', 'signalled', 'requeued', 'held', 'updated', 'released', 'done',
                                       'rolled_back')),
  from_record TEXT NOT NULL,
  to_record TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
-- At most one unfinished reconfiguration per job.
CREATE UNIQUE INDEX journal_one_open_per_job ON journal (job_id) WHERE state NOT IN ('done', 'rolled_back');
)sql";

// v2: each job's time without GPUs since its submission, which the anti-starvation rule
// reads (docs/policy.md): morphd counts it round by round, since Slurm resets a requeued
// job's submit time. `pending` is what the job was at `observed_at`.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE job_waits (
  job_id INTEGER PRIMARY KEY REFERENCES jobs (job_id),
  waited_s REAL NOT NULL CHECK (waited_s >= 0),
  observed_at REAL NOT NULL,
  pending INTEGER NOT NULL CHECK (pending IN (0, 1))
);
)sql";

// v3: what the online refit remembers (libmorph/policy/model_refit.h): per model,
// application and configuration, each job's latest iteration time, so that a restarted
// morphd refits from what ended jobs measured too. `job` is the policy's job id (text),
// not a reference: a point outlives its job's row in nothing, but may come from a
// simulated or imported one. `plan` is Morph's plan text, `allocation` a JSON array of
// {node, node_type, gpus, cpus}.
constexpr const char* kSchemaV3 = R"sql(
CREATE TABLE refit_points (
  model TEXT NOT NULL,
  app TEXT NOT NULL,
  configuration TEXT NOT NULL,
  job TEXT NOT NULL,
  global_batch INTEGER NOT NULL CHECK (global_batch > 0),
  seq_len INTEGER NOT NULL CHECK (seq_len > 0),
  plan TEXT NOT NULL,
  allocation TEXT NOT NULL,
  iteration_s REAL NOT NULL CHECK (iteration_s > 0),
  recorded_at REAL NOT NULL,
  PRIMARY KEY (model, app, configuration, job)
);
)sql";

// v4: one observation per job, step and layout. morphrun sends a batch again when it
// missed morphd's answer, under a new credential; the copy must not count twice in the
// throughput medians. Copies already recorded are removed, the first kept.
constexpr const char* kSchemaV4 = R"sql(
DELETE FROM observations WHERE id NOT IN (SELECT MIN(id) FROM observations GROUP BY job_id, step, layout);
CREATE UNIQUE INDEX observations_once ON observations (job_id, step, layout);
)sql";

// v5: the limits of a job's size that Slurm refused (daemon/size_caps.h), so that a
// restarted morphd does not plan a job back into its QOS's or association's limit (a
// running one would be requeued into it, and out again). 0: no cap of that kind.
constexpr const char* kSchemaV5 = R"sql(
CREATE TABLE size_caps (
  job_id INTEGER PRIMARY KEY REFERENCES jobs (job_id),
  max_gpus INTEGER NOT NULL CHECK (max_gpus >= 0),
  max_nodes INTEGER NOT NULL CHECK (max_nodes >= 0),
  at_least INTEGER NOT NULL CHECK (at_least IN (0, 1))
);
)sql";

// v6: the journal's queries of every round find their rows by index, where they scanned the
// whole journal, which grows by every reconfiguration ever made: a job's done entries
// (done_reconfigurations, per job each round) and the unfinished ones in order (the partial
// index holds those alone). On 200,000 rows: 9 ms a job and 15 ms, then 0.01 ms and 0.4 ms.
constexpr const char* kSchemaV6 = R"sql(
CREATE INDEX journal_by_job_state ON journal (job_id, state);
CREATE INDEX journal_open_by_id ON journal (id) WHERE state NOT IN ('done', 'rolled_back');
)sql";

// v7: the jobs that ended, by their end, for the purge of each round (PurgeJobsAfterDays,
// StateStore::purge_ended_jobs), which would otherwise scan every job ever recorded.
constexpr const char* kSchemaV7 = R"sql(
CREATE INDEX jobs_by_end ON jobs (finished_at) WHERE finished_at IS NOT NULL;
)sql";

constexpr std::array kMigrations = {Migration{1, kSchemaV1}, Migration{2, kSchemaV2}, Migration{3, kSchemaV3},
                                    Migration{4, kSchemaV4}, Migration{5, kSchemaV5}, Migration{6, kSchemaV6},
                                    Migration{7, kSchemaV7}};

}  // namespace

std::span<const Migration> schema_migrations() { return kMigrations; }

int schema_version(const Database& db) {
  Statement version = db.prepare("PRAGMA user_version", "read the schema version");
  if (!version.step()) db.fail("read the schema version");
  return static_cast<int>(version.column_int(0));
}

void refuse_newer_schema(const Database& db, int current, int latest, std::string_view advice) {
  if (current > latest)
    throw Error(fmt::format("{}: the state database has schema version {}, newer than the {} this Morph knows; "
                            "it was written by a newer morphd: {}",
                            db.path(), current, latest, advice));
}

void migrate(const Database& db, std::span<const Migration> migrations) {
  for (std::size_t i = 0; i < migrations.size(); ++i)
    if (migrations[i].version != static_cast<int>(i) + 1)
      throw Error(fmt::format("{}: migration {} has version {}; versions must run 1, 2, ...", db.path(), i + 1,
                              migrations[i].version));
  const int latest = static_cast<int>(migrations.size());
  const int current = schema_version(db);
  refuse_newer_schema(db, current, latest, "run that version, or set StateDatabase= to another file");
  for (const Migration& migration : migrations.subspan(static_cast<std::size_t>(current))) {
    const std::string operation = fmt::format("migrate the schema to version {}", migration.version);
    Transaction transaction(db, Transaction::Kind::write, operation);
    if (schema_version(db) >= migration.version) continue;  // another process migrated meanwhile
    db.exec(migration.sql, operation);
    // PRAGMA takes no bound parameter; the version is this program's constant, not input.
    db.exec(fmt::format("PRAGMA user_version = {}", migration.version), operation);
    transaction.commit();
  }
}

}  // namespace morph::store
