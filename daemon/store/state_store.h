// morphd's state in SQLite (docs/state.md): fitted parameters, jobs and their plans,
// observed throughput, decisions, and the journal of reconfigurations that lets morphd
// finish or roll back what a crash interrupted. Every write is one transaction; values
// are always bound parameters. Errors are morph::Error "PATH: OPERATION: why".
//
// One StateStore is one connection, not thread-safe; two (in one process or two) may use
// the same file at once: WAL lets readers run beside the writer, and a writer waits
// up to kBusyTimeoutMs for another.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/store/records.h"
#include "daemon/store/schema.h"
#include "daemon/store/sqlite_handle.h"

namespace morph::store {

class StateStore {
 public:
  static constexpr int kBusyTimeoutMs = 5000;
  static constexpr int kDefaultThroughputWindow = 20;  // observations in the median
  // The newest observations kept per job: a job's reports (or a flood of them, 46,000 rows
  // a second from one client in a security review) do not fill the disk. Pruned once a
  // job has had kObservationPruneEvery more recorded, so that a report costs O(1).
  static constexpr std::int64_t kMaxObservationsPerJob = 100'000;
  static constexpr std::int64_t kObservationPruneEvery = 10'000;

  // Creates the file (mode 0600) or opens it, refusing one that group or others may write;
  // WAL, foreign keys on; migrates it to this Morph's schema, refusing a newer one.
  static StateStore open(const std::string& path);
  // The same with another list of migrations (tests; a future schema).
  static StateStore open(const std::string& path, std::span<const Migration> migrations);
  // For the commands that only read what morphd wrote (morph status, explain, models):
  // an existing file, opened read-only and never migrated, since migrating would change
  // the schema under a running older morphd. A schema other than this Morph's last is
  // refused, saying which side is older. Writes through it fail.
  static StateStore open_read_only(const std::string& path);
  static StateStore open_read_only(const std::string& path, std::span<const Migration> migrations);
  // For the commands that change what morphd wrote (morph forget): an existing file at
  // this Morph's schema, opened read-write, never created nor migrated; a file of another
  // program (schema version 0) is refused, not filled with Morph's tables.
  static StateStore open_existing(const std::string& path);

  const std::string& path() const { return db_.path(); }
  int schema_version() const;

  // Fitted parameters: history kept, the latest per model in use. The JSON must be a
  // performance model fitted for `fit.model`.
  void record_fitted_params(const FittedParams& fit);
  std::optional<FittedParams> latest_params(const std::string& model) const;
  std::vector<FittedParams> params_history(const std::string& model) const;  // oldest first

  // Jobs, their plans, what they achieved and why.
  void record_job(const JobRow& job);  // refuses a job id already recorded
  void finish_job(JobId job_id, std::int64_t finished_at);
  // Clears a job's end: Slurm lists it alive again (an administrator requeued it after it
  // completed), and it keeps all that is recorded of it.
  void reopen_job(JobId job_id);
  // Removes a job and all that is recorded of it, for a new job under its id (Slurm's
  // ids wrap, and start again at 1 when slurmctld's state is cleared). Refuses, removing
  // nothing, while the job has an unfinished reconfiguration: its entry is what releases
  // a job morphd held.
  void forget_job(JobId job_id);
  // Removes all that is recorded of at most `limit` jobs that ended before `ended_before`,
  // the longest ended first, in one transaction (PurgeJobsAfterDays); a job with an
  // unfinished reconfiguration is kept, as by forget_job. Returns how many went.
  int purge_ended_jobs(std::int64_t ended_before, int limit);
  std::optional<JobRow> job(JobId job_id) const;
  std::vector<JobId> unfinished_jobs() const;  // recorded without an end, by id
  void record_plan(const PlanPeriod& plan);  // the job must be recorded; until_time is ignored
  // Each replaces its job's last; the jobs must be recorded. All or none, in one transaction.
  void record_waits(std::span<const JobWait> waits);
  std::optional<JobWait> job_wait(JobId job_id) const;
  // The size caps morphd holds, in place of those recorded before; a cap of a job not
  // recorded is left out. All or none.
  void replace_size_caps(std::span<const SizeCapRow> caps);
  std::vector<SizeCapRow> size_caps() const;  // by job id
  void record_observations(std::span<const Observation> observations);  // all or none
  // The same, keeping at most `keep` observations per job (tests; kMaxObservationsPerJob).
  void record_observations(std::span<const Observation> observations, std::int64_t keep, std::int64_t prune_every);
  // Jobs whose observations since their last pruning are counted: those that may report
  // (an ended or purged job is dropped).
  std::size_t jobs_counted_for_pruning() const { return unpruned_.size(); }
  // The last `last` observations of a job made in [from_time, until_time) (none: until
  // now), oldest first.
  std::vector<Observation> observations(JobId job_id, std::int64_t from_time, std::optional<std::int64_t> until_time,
                                        int last) const;
  // The first `first` observations of a job recorded after `after` (its time and id; a
  // default Observation: from the start), in that order: a reader that goes on from the
  // last one it read sees each once.
  std::vector<Observation> observations_after(JobId job_id, const Observation& after, int first) const;
  std::int64_t record_decision(const Decision& decision);  // returns its id

  // What the online refit remembers. Each point replaces its job's on the same
  // configuration; a configuration then keeps its `keep` newest. All or none.
  void record_refit_points(std::span<const RefitPointRow> points, int keep);
  std::vector<RefitPointRow> refit_points() const;  // oldest first
  // Deletes the refit points recorded before `before_s` (RefitPointMaxAgeDays); returns how many.
  int expire_refit_points(double before_s);
  // Forgets what was learnt of `model` from its jobs: its fitted parameters from `source`
  // (the online refits) and its refit points, in one transaction. Returns how many of each.
  struct Forgotten {
    int fitted_params = 0;
    int refit_points = 0;
  };
  Forgotten forget_learnt(const std::string& model, const std::string& source);

  // The reconfiguration journal: begin before the first Slurm action, advance after each.
  // One unfinished entry per job; states only move forward (journal_state.h).
  std::int64_t journal_begin(JobId job_id, ReconfigurationPath path, const std::string& from_record,
                             const std::string& to_record, std::int64_t now);
  void journal_advance(std::int64_t id, JournalState state, std::int64_t now);
  JournalEntry journal_entry(std::int64_t id) const;
  std::vector<JournalEntry> unfinished_reconfigurations() const;  // by id
  std::optional<JournalEntry> unfinished_reconfiguration(JobId job_id) const;  // the job's one
  DoneReconfigurations done_reconfigurations(JobId job_id) const;

  // What morph status and morph explain show.
  std::vector<PlanPeriod> job_timeline(JobId job_id) const;  // by from_time, until_time filled
  std::vector<JobTimeline> all_timelines() const;            // by job id
  std::optional<Decision> latest_decision(JobId job_id) const;
  std::vector<Decision> decisions(JobId job_id) const;  // oldest first
  // None for a job without a plan.
  std::optional<JobThroughput> job_throughput(JobId job_id, int last_observations = kDefaultThroughputWindow) const;

 private:
  explicit StateStore(Database db) : db_(std::move(db)) {}
  void delete_job_rows(JobId job_id, const std::string& operation);  // inside the caller's transaction
  Database db_;
  std::map<JobId, std::int64_t> unpruned_;  // observations recorded per job since its last pruning
};

}  // namespace morph::store
