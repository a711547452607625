// morphd's state database (daemon/store): round trips, the journal and its recovery,
// migrations, file mode, damaged files, two connections at once and one writer at a time.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "daemon/store/journal_state.h"
#include "daemon/store/state_store.h"
#include "daemon/store/writer_lock.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/util/error.h"

namespace morph::store {
namespace {

namespace fs = std::filesystem;

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "morph-state-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    db_path_ = (dir_ / "morph.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  static JobRow job(JobId id, std::string model = "gpt-1.5b") {
    return {id, std::move(model), 512, Sla::guaranteed, 1000, 100, std::nullopt};
  }
  static PlanPeriod plan(JobId id, std::int64_t from, double predicted) {
    return {id, from, "morph:v1 plan=d" + std::to_string(from), "a100", 2, 4, predicted, std::nullopt};
  }
  static std::string params_json(const std::string& model, double per_sample_ms) {
    PerfModel perf;
    perf.forward.intercept_ms = 1;
    perf.forward.per_sample_ms = per_sample_ms;
    perf.forward.reference_speed = 1;
    return perf_model_to_json(model, perf);
  }
  static RefitPointRow refit_point(const std::string& job, double seconds, double at) {
    return {"gpt2-1.5b", "gpt2-1.5b b16", "gpt2 dp=8 on 8xa100 (4 CPUs per GPU)", job, 16, 1024, "dp=8", "[]",
            seconds, at};
  }
  // The message of the morph::Error `f` throws ("" when it throws none).
  template <typename F>
  static std::string error_of(F&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
  std::string db_path_;
};

#define EXPECT_CONTAINS(text, part) EXPECT_PRED_FORMAT2(::testing::IsSubstring, part, text)

TEST_F(StateStoreTest, CreatesAPrivateWriteAheadLoggedDatabase) {
  StateStore store = StateStore::open(db_path_);
  EXPECT_EQ(store.schema_version(), 7);
  store.record_job(job(1));
  struct stat st {};
  ASSERT_EQ(::stat(db_path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((db_path_ + "-wal").c_str(), &st), 0) << "no write-ahead log beside the database";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(StateStoreTest, RefusesADatabaseOthersMayWrite) {
  StateStore::open(db_path_);
  ASSERT_EQ(::chmod(db_path_.c_str(), 0666), 0);
  const std::string error = error_of([&] { StateStore::open(db_path_); });
  EXPECT_CONTAINS(error, db_path_);
  EXPECT_CONTAINS(error, "chmod 600");
}

TEST_F(StateStoreTest, ANonSqliteFileIsAClearError) {
  std::ofstream(db_path_) << std::string(4096, 'x');
  ASSERT_EQ(::chmod(db_path_.c_str(), 0600), 0);
  const std::string error = error_of([&] { StateStore::open(db_path_); });
  EXPECT_CONTAINS(error, db_path_);
  EXPECT_CONTAINS(error, "not a database");
}

TEST_F(StateStoreTest, AMissingFolderNamesThePath) {
  const std::string path = (dir_ / "no" / "morph.db").string();
  EXPECT_CONTAINS(error_of([&] { StateStore::open(path); }), path + ": create the state database");
}

TEST_F(StateStoreTest, FittedParametersLatestAndHistory) {
  StateStore store = StateStore::open(db_path_);
  EXPECT_FALSE(store.latest_params("gpt-1.5b"));
  store.record_fitted_params({"gpt-1.5b", params_json("gpt-1.5b", 2), "morph-profile", 100, 0.05});
  store.record_fitted_params({"gpt-1.5b", params_json("gpt-1.5b", 3), "online refit of job 7", 200, 0.02});
  store.record_fitted_params({"llama2-7b", params_json("llama2-7b", 9), "morph-profile", 300, 0.1});
  const auto latest = store.latest_params("gpt-1.5b");
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->source, "online refit of job 7");
  EXPECT_EQ(latest->fitted_at, 200);
  EXPECT_DOUBLE_EQ(latest->rmsle, 0.02);
  std::string model;
  EXPECT_DOUBLE_EQ(perf_model_from_json(latest->params_json, "test", &model).forward.per_sample_ms, 3);
  EXPECT_EQ(model, "gpt-1.5b");
  ASSERT_EQ(store.params_history("gpt-1.5b").size(), 2u);
  EXPECT_EQ(store.params_history("gpt-1.5b")[0].fitted_at, 100);

  EXPECT_CONTAINS(error_of([&] { store.record_fitted_params({"gpt-1.5b", params_json("other", 2), "x", 1, 0}); }),
              "fitted for other");
  EXPECT_CONTAINS(error_of([&] { store.record_fitted_params({"gpt-1.5b", "{", "x", 1, 0}); }), "malformed");
  EXPECT_EQ(store.params_history("gpt-1.5b").size(), 2u);
}

TEST_F(StateStoreTest, JobsAndTheirTimelines) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(42));
  store.record_job({43, "llama2-7b", 256, Sla::best_effort, 1001, 150, std::nullopt});
  store.record_plan(plan(42, 100, 50));
  store.record_plan(plan(42, 400, 80));
  store.record_plan(plan(43, 150, 30));
  store.finish_job(42, 900);

  const auto row = store.job(42);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->model, "gpt-1.5b");
  EXPECT_EQ(row->global_batch, 512);
  EXPECT_EQ(row->sla, Sla::guaranteed);
  EXPECT_EQ(row->user_uid, 1000u);
  EXPECT_EQ(row->finished_at, 900);
  EXPECT_FALSE(store.job(44));

  const auto timeline = store.job_timeline(42);
  ASSERT_EQ(timeline.size(), 2u);
  EXPECT_EQ(timeline[0].record, "morph:v1 plan=d100");
  EXPECT_EQ(timeline[0].until_time, 400);
  EXPECT_EQ(timeline[1].until_time, 900);
  EXPECT_EQ(timeline[1].gpu_type, "a100");
  EXPECT_EQ(timeline[1].nodes, 2);
  EXPECT_EQ(timeline[1].gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(timeline[1].predicted_samples_per_s, 80);

  const auto all = store.all_timelines();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].job.job_id, 43u);
  EXPECT_EQ(all[1].job.sla, Sla::best_effort);
  ASSERT_EQ(all[1].plans.size(), 1u);
  EXPECT_FALSE(all[1].plans[0].until_time);  // still running

  EXPECT_CONTAINS(error_of([&] { store.record_job(job(42)); }), "record job 42");
  // Foreign keys are on: no plan for a job that was never recorded.
  EXPECT_CONTAINS(error_of([&] { store.record_plan(plan(99, 1, 1)); }), "FOREIGN KEY");
  EXPECT_CONTAINS(error_of([&] { store.finish_job(99, 1); }), "no such job");
}

// A job's observations are bounded: the newest `keep` stay, pruned every `prune_every`
// recorded, so that a flood of reports (or a long job) does not fill the disk.
TEST_F(StateStoreTest, AJobKeepsItsNewestObservationsOnly) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(5));
  store.record_job(job(6));
  for (std::int64_t step = 1; step <= 24; ++step)
    store.record_observations(std::array{Observation{5, 100 + step, step, 1.0, 8, "d4"}}, 10, 5);
  store.record_observations(std::array{Observation{6, 100, 1, 1.0, 8, "d4"}}, 10, 5);
  std::vector<Observation> kept = store.observations(5, 0, std::nullopt, 1000);
  ASSERT_EQ(kept.size(), 14u) << "pruned at the 20th, 4 recorded since";
  EXPECT_EQ(kept.front().step, 11);
  EXPECT_EQ(kept.back().step, 24);
  store.record_observations(std::array{Observation{5, 125, 25, 1.0, 8, "d4"}}, 10, 5);
  kept = store.observations(5, 0, std::nullopt, 1000);
  ASSERT_EQ(kept.size(), 10u);
  EXPECT_EQ(kept.front().step, 16);
  EXPECT_EQ(store.observations(6, 0, std::nullopt, 1000).size(), 1u) << "another job's are its own";
}

// The wall clock stepped back (NTP) between two reports: the later observation is not
// stamped before the earlier, or reading on from the last one read would skip it for good.
TEST_F(StateStoreTest, AJobsObservationsNeverGoBackInTime) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(5));
  store.record_job(job(6));
  store.record_observations(std::array{Observation{5, 200, 1, 1.0, 8, "d4"}});
  const Observation last = store.observations(5, 0, std::nullopt, 1).back();
  store.record_observations(std::array{Observation{5, 150, 2, 1.0, 8, "d4"}, Observation{6, 150, 1, 1.0, 8, "d4"}});
  const std::vector<Observation> after = store.observations_after(5, last, 10);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].step, 2);
  EXPECT_EQ(after[0].time, 200);
  EXPECT_EQ(store.observations(6, 0, std::nullopt, 1).back().time, 150) << "another job's clock is its own";
}

// The count of observations since a job's last pruning is kept while the job may report:
// dropped when it ends or is purged, so that it does not grow with every job morphd saw.
TEST_F(StateStoreTest, PruningCountsOnlyJobsThatMayReport) {
  StateStore store = StateStore::open(db_path_);
  for (JobId id : {5u, 6u, 7u}) {
    store.record_job(job(id));
    store.record_observations(std::array{Observation{id, 100, 1, 1.0, 8, "d4"}});
  }
  EXPECT_EQ(store.jobs_counted_for_pruning(), 3u);
  store.finish_job(5, 200);
  EXPECT_EQ(store.jobs_counted_for_pruning(), 2u);
  store.finish_job(6, 200);
  store.reopen_job(6);
  store.record_observations(std::array{Observation{6, 300, 2, 1.0, 8, "d4"}});
  EXPECT_EQ(store.jobs_counted_for_pruning(), 2u);
  store.finish_job(6, 400);
  store.finish_job(7, 400);
  EXPECT_EQ(store.jobs_counted_for_pruning(), 0u);
}

TEST_F(StateStoreTest, PredictedAgainstObservedThroughput) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(5));
  EXPECT_FALSE(store.job_throughput(5));
  store.record_plan(plan(5, 100, 64));
  EXPECT_EQ(store.job_throughput(5)->observations, 0);
  EXPECT_FALSE(store.job_throughput(5)->observed_samples_per_s);
  // Under an earlier plan: left out.
  store.record_observations(std::array{Observation{5, 90, 1, 1.0, 1000, "d8"}});
  // 512 samples in 8, 10, 16, 4 s: 64, 51.2, 32, 128 samples/s.
  store.record_observations(std::array{Observation{5, 110, 10, 8.0, 512, "d4"}, Observation{5, 120, 20, 10.0, 512, "d4"},
                                       Observation{5, 130, 30, 16.0, 512, "d4"}, Observation{5, 140, 40, 4.0, 512, "d4"}});
  const auto all = store.job_throughput(5);
  ASSERT_TRUE(all);
  EXPECT_DOUBLE_EQ(all->predicted_samples_per_s, 64);
  EXPECT_EQ(all->observations, 4);
  EXPECT_DOUBLE_EQ(*all->observed_samples_per_s, (51.2 + 64) / 2);
  const auto last3 = store.job_throughput(5, 3);  // 51.2, 32, 128
  EXPECT_EQ(last3->observations, 3);
  EXPECT_DOUBLE_EQ(*last3->observed_samples_per_s, 51.2);

  // A batch is all or nothing: the bad second row leaves the first out too.
  EXPECT_CONTAINS(error_of([&] {
                store.record_observations(
                    std::array{Observation{5, 150, 50, 2.0, 512, "d4"}, Observation{5, 160, 60, 0.0, 512, "d4"}});
              }),
              "CHECK constraint");
  EXPECT_EQ(store.job_throughput(5)->observations, 4);

  // morphrun sends a batch again when it missed morphd's answer: the copies count once,
  // and the rest of the batch is kept (schema v4).
  store.record_observations(std::array{Observation{5, 150, 40, 4.0, 512, "d4"}, Observation{5, 150, 50, 2.0, 512, "d4"}});
  EXPECT_EQ(store.job_throughput(5)->observations, 5);
  std::vector<double> step40;
  for (const Observation& o : store.observations(5, 0, std::nullopt, 10))
    if (o.step == 40) step40.push_back(o.seconds);
  EXPECT_EQ(step40, std::vector<double>{4.0});  // the first copy's
}

TEST_F(StateStoreTest, ObservationsOfAJobInATimeRange) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(5));
  store.record_job(job(6));
  store.record_observations(std::array{Observation{5, 100, 1, 1.0, 512, "d4"}, Observation{5, 110, 2, 2.0, 512, "d4"},
                                       Observation{5, 120, 3, 3.0, 512, "d8"}, Observation{5, 130, 4, 4.0, 512, "d8"},
                                       Observation{6, 115, 1, 9.0, 512, "d4"}});
  auto seconds = [](const std::vector<Observation>& observations) {
    std::vector<double> out;
    for (const Observation& o : observations) out.push_back(o.seconds);
    return out;
  };
  EXPECT_EQ(seconds(store.observations(5, 0, std::nullopt, 10)), (std::vector<double>{1, 2, 3, 4}));  // oldest first
  EXPECT_EQ(seconds(store.observations(5, 110, 130, 10)), (std::vector<double>{2, 3}));  // [from, until)
  EXPECT_EQ(seconds(store.observations(5, 0, std::nullopt, 2)), (std::vector<double>{3, 4}));  // the last ones
  const std::vector<Observation> one = store.observations(6, 0, std::nullopt, 10);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].job_id, 6u);
  EXPECT_EQ(one[0].time, 115);
  EXPECT_EQ(one[0].step, 1);
  EXPECT_EQ(one[0].samples, 512);
  EXPECT_EQ(one[0].layout, "d4");
  EXPECT_TRUE(store.observations(7, 0, std::nullopt, 10).empty());
  EXPECT_CONTAINS(error_of([&] { store.observations(5, 0, std::nullopt, 0); }), "at least 1");
}

TEST_F(StateStoreTest, DecisionsForExplain) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(8));
  EXPECT_FALSE(store.latest_decision(8));
  const std::string alternatives = R"([{"plan":"d8","samples_per_s":90,"lost":"needs 8 GPUs, 4 free"}])";
  const auto first = store.record_decision({0, 100, 8, "start", "best predicted throughput on free GPUs", "[]"});
  const auto second = store.record_decision({0, 200, 8, "reconfigure", "4 more A100 free", alternatives});
  EXPECT_LT(first, second);
  const auto latest = store.latest_decision(8);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->id, second);
  EXPECT_EQ(latest->action, "reconfigure");
  EXPECT_EQ(latest->alternatives_json, alternatives);
  ASSERT_EQ(store.decisions(8).size(), 2u);
  EXPECT_EQ(store.decisions(8)[0].reason, "best predicted throughput on free GPUs");
  EXPECT_CONTAINS(error_of([&] { store.record_decision({0, 300, 8, "keep", "x", R"({"plan":"d8"})"}); }),
              "not a JSON array");
}

TEST_F(StateStoreTest, TheJournalMovesOnlyForward) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(3));
  const auto id = store.journal_begin(3, ReconfigurationPath::requeue, "morph:v1 from", "morph:v1 to", 100);
  EXPECT_CONTAINS(error_of([&] { store.journal_begin(3, ReconfigurationPath::inplace, "a", "b", 101); }),
              "still at planned");
  store.journal_advance(id, JournalState::signalled, 110);
  store.journal_advance(id, JournalState::requeued, 120);
  const std::string back = error_of([&] { store.journal_advance(id, JournalState::signalled, 130); });
  EXPECT_CONTAINS(back, "go back from requeued to signalled");
  EXPECT_CONTAINS(back, db_path_);
  EXPECT_EQ(store.journal_entry(id).state, JournalState::requeued);
  store.journal_advance(id, JournalState::held, 135);
  store.journal_advance(id, JournalState::updated, 140);
  store.journal_advance(id, JournalState::released, 150);
  store.journal_advance(id, JournalState::done, 160);
  EXPECT_CONTAINS(error_of([&] { store.journal_advance(id, JournalState::rolled_back, 170); }), "finished");
  const JournalEntry entry = store.journal_entry(id);
  EXPECT_EQ(entry.started_at, 100);
  EXPECT_EQ(entry.updated_at, 160);
  EXPECT_TRUE(store.unfinished_reconfigurations().empty());

  // The next reconfiguration of the job may begin, and be rolled back from any step.
  const auto next = store.journal_begin(3, ReconfigurationPath::shrink, "morph:v1 to", "morph:v1 smaller", 200);
  EXPECT_CONTAINS(error_of([&] { store.journal_advance(next, JournalState::signalled, 210); }), "shrink path");
  store.journal_advance(next, JournalState::rolled_back, 230);
  EXPECT_THROW(store.journal_advance(12345, JournalState::done, 1), Error);
}

// What the restart backoff reads (ClusterView's JobState::restarts, last_restart_s): the
// reconfigurations done, a start not counted as a restart, one rolled back not at all.
TEST_F(StateStoreTest, DoneReconfigurationsCountTheRestarts) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(3));
  EXPECT_FALSE(store.done_reconfigurations(3).last_at);
  EXPECT_EQ(store.done_reconfigurations(3).restarts, 0);
  const auto finish = [&](ReconfigurationPath path, JournalState last, std::int64_t at) {
    const auto id = store.journal_begin(3, path, "a", "b", at);
    store.journal_advance(id, last, at + 5);
  };
  finish(ReconfigurationPath::start, JournalState::updated, 100);
  store.journal_advance(1, JournalState::done, 110);
  EXPECT_EQ(store.done_reconfigurations(3).last_at, 110);
  EXPECT_EQ(store.done_reconfigurations(3).restarts, 0);
  finish(ReconfigurationPath::inplace, JournalState::updated, 200);
  store.journal_advance(2, JournalState::done, 210);
  finish(ReconfigurationPath::shrink, JournalState::rolled_back, 300);
  EXPECT_EQ(store.done_reconfigurations(3).last_at, 210);
  EXPECT_EQ(store.done_reconfigurations(3).restarts, 1);
  EXPECT_EQ(store.done_reconfigurations(4).restarts, 0);
}

TEST(StateStoreJournalState, EachPathsSteps) {
  using enum JournalState;
  EXPECT_EQ(journal_steps(ReconfigurationPath::inplace).size(), 3u);
  EXPECT_NO_THROW(check_journal_transition(ReconfigurationPath::inplace, planned, updated, "j"));
  EXPECT_THROW(check_journal_transition(ReconfigurationPath::inplace, planned, signalled, "j"), Error);
  EXPECT_NO_THROW(check_journal_transition(ReconfigurationPath::shrink, planned, updated, "j"));
  // A step whose effect Slurm already shows is skipped: a job found pending needs no signal.
  EXPECT_NO_THROW(check_journal_transition(ReconfigurationPath::requeue, planned, requeued, "j"));
  EXPECT_THROW(check_journal_transition(ReconfigurationPath::preempt, requeued, held, "j"), Error);
  EXPECT_EQ(journal_steps(ReconfigurationPath::requeue).size(), 7u);
  EXPECT_NO_THROW(check_journal_transition(ReconfigurationPath::requeue, released, rolled_back, "j"));
  EXPECT_THROW(check_journal_transition(ReconfigurationPath::requeue, rolled_back, done, "j"), Error);
  EXPECT_THROW(check_journal_transition(ReconfigurationPath::requeue, updated, updated, "j"), Error);
  for (const auto state : {planned, signalled, requeued, held, updated, released, done, rolled_back})
    EXPECT_EQ(parse_journal_state(to_string(state), "j"), state);
  EXPECT_THROW(parse_journal_state("halfway", "j"), Error);
}

// A morphd that dies between two steps, without closing the database (no destructors run):
// the next one finds the entry at the last step it recorded.
TEST_F(StateStoreTest, AnInterruptedReconfigurationIsFoundAfterACrash) {
  {
    StateStore store = StateStore::open(db_path_);
    store.record_job(job(11));
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      StateStore store = StateStore::open(db_path_);
      const auto id = store.journal_begin(11, ReconfigurationPath::requeue, "from", "to", 100);
      store.journal_advance(id, JournalState::signalled, 110);
      store.journal_advance(id, JournalState::requeued, 120);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);  // still inside no scope: the connection is never closed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  StateStore store = StateStore::open(db_path_);
  const auto unfinished = store.unfinished_reconfigurations();
  ASSERT_EQ(unfinished.size(), 1u);
  EXPECT_EQ(unfinished[0].job_id, 11u);
  EXPECT_EQ(unfinished[0].path, ReconfigurationPath::requeue);
  EXPECT_EQ(unfinished[0].state, JournalState::requeued);
  EXPECT_EQ(unfinished[0].from_record, "from");
  EXPECT_EQ(unfinished[0].to_record, "to");
  // Recovery goes on from requeued: hold, update, release, done.
  store.journal_advance(unfinished[0].id, JournalState::held, 195);
  store.journal_advance(unfinished[0].id, JournalState::updated, 200);
  store.journal_advance(unfinished[0].id, JournalState::released, 210);
  store.journal_advance(unfinished[0].id, JournalState::done, 220);
  EXPECT_TRUE(store.unfinished_reconfigurations().empty());
}

// How SQLite runs `query` on the database at `path`: EXPLAIN QUERY PLAN's details, one a line.
std::string query_plan(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  std::string plan;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + query).c_str(), -1, &statement, nullptr) == SQLITE_OK)
      while (sqlite3_step(statement) == SQLITE_ROW)
        plan += reinterpret_cast<const char*>(sqlite3_column_text(statement, 3)) + std::string("\n");
    sqlite3_finalize(statement);
  }
  sqlite3_close(db);
  return plan;
}

constexpr Migration kFakeV8{8, R"sql(
ALTER TABLE jobs ADD COLUMN partition TEXT NOT NULL DEFAULT 'gpu';
CREATE TABLE node_events (id INTEGER PRIMARY KEY, node TEXT NOT NULL, time INTEGER NOT NULL);
)sql"};

TEST_F(StateStoreTest, AV1DatabaseMigratesAndKeepsItsData) {
  ASSERT_EQ(schema_migrations().size(), 7u);
  {
    StateStore v1 = StateStore::open(db_path_, schema_migrations().first(1));
    EXPECT_EQ(v1.schema_version(), 1);
    v1.record_job(job(21));
    v1.record_plan(plan(21, 100, 10));
    const auto id = v1.journal_begin(21, ReconfigurationPath::inplace, "a", "b", 100);
    v1.journal_advance(id, JournalState::updated, 101);
  }
  {
    StateStore v2 = StateStore::open(db_path_, schema_migrations().first(2));  // the waiting times
    EXPECT_EQ(v2.schema_version(), 2);
    EXPECT_FALSE(v2.job_wait(21));
    v2.record_waits(std::vector<JobWait>{{21, 30, 1000, true}});
  }
  {
    StateStore v3 = StateStore::open(db_path_, schema_migrations().first(3));  // the refit's points
    EXPECT_EQ(v3.schema_version(), 3);
    EXPECT_TRUE(v3.refit_points().empty());
    v3.record_refit_points(std::vector<RefitPointRow>{refit_point("21", 0.5, 1000)}, 16);
  }
  {  // Version 3 recorded a step twice when morphrun sent it again.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "INSERT INTO observations (job_id, time, step, seconds, samples, layout) VALUES "
                           "(21, 110, 7, 1.5, 512, 'd4'), (21, 110, 8, 2.5, 512, 'd4'), (21, 111, 7, 1.5, 512, 'd4')",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  {
    StateStore v4 = StateStore::open(db_path_, schema_migrations().first(4));  // each step once
    EXPECT_EQ(v4.schema_version(), 4);
    std::vector<double> seconds;
    for (const Observation& o : v4.observations(21, 0, std::nullopt, 10)) seconds.push_back(o.seconds);
    EXPECT_EQ(seconds, (std::vector<double>{1.5, 2.5}));
  }
  {
    StateStore v5 = StateStore::open(db_path_, schema_migrations().first(5));  // the size caps
    EXPECT_EQ(v5.schema_version(), 5);
    EXPECT_TRUE(v5.size_caps().empty());
    v5.replace_size_caps(std::vector<SizeCapRow>{{21, 4, 0, false}});
  }
  // The journal's queries of every round, as state_journal.cc phrases them.
  const std::string done_query =
      "SELECT MAX(updated_at), COALESCE(SUM(path <> 'start'), 0) FROM journal WHERE job_id = 21 AND state = 'done'";
  const std::string unfinished_query =
      "SELECT id, job_id, path, state, from_record, to_record, started_at, updated_at FROM journal "
      "WHERE state NOT IN ('done', 'rolled_back') ORDER BY id";
  EXPECT_CONTAINS(query_plan(db_path_, done_query), "SCAN journal");  // the whole journal, every round
  {
    StateStore v6 = StateStore::open(db_path_, schema_migrations().first(6));  // the journal's indexes
    EXPECT_EQ(v6.schema_version(), 6);
    ASSERT_EQ(v6.unfinished_reconfigurations().size(), 1u);
    EXPECT_EQ(v6.unfinished_reconfigurations()[0].state, JournalState::updated);
    const auto id = v6.unfinished_reconfigurations()[0].id;
    v6.journal_advance(id, JournalState::done, 102);
    EXPECT_TRUE(v6.unfinished_reconfigurations().empty());
    EXPECT_EQ(v6.done_reconfigurations(21).last_at, 102);
    EXPECT_EQ(v6.done_reconfigurations(21).restarts, 1);  // in place
  }
  EXPECT_CONTAINS(query_plan(db_path_, done_query), "SEARCH journal USING INDEX journal_by_job_state");
  EXPECT_CONTAINS(query_plan(db_path_, unfinished_query), "SCAN journal USING INDEX journal_open_by_id");
  const std::string ended_query = "SELECT job_id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < 5";
  EXPECT_CONTAINS(query_plan(db_path_, ended_query), "SCAN jobs");  // every job ever recorded, every round
  {
    StateStore v7 = StateStore::open(db_path_);  // this Morph's version 7: the jobs by their end
    EXPECT_EQ(v7.schema_version(), 7);
    v7.finish_job(21, 200);
    EXPECT_EQ(v7.purge_ended_jobs(100, 10), 0);
  }
  EXPECT_CONTAINS(query_plan(db_path_, ended_query), "SEARCH jobs USING COVERING INDEX jobs_by_end");
  const std::array migrations = {schema_migrations()[0], schema_migrations()[1], schema_migrations()[2],
                                 schema_migrations()[3], schema_migrations()[4], schema_migrations()[5],
                                 schema_migrations()[6], kFakeV8};
  {
    StateStore v8 = StateStore::open(db_path_, migrations);
    EXPECT_EQ(v8.schema_version(), 8);
    EXPECT_EQ(v8.size_caps(), (std::vector<SizeCapRow>{{21, 4, 0, false}}));
    ASSERT_TRUE(v8.job(21));
    EXPECT_EQ(v8.job(21)->global_batch, 512);
    EXPECT_EQ(v8.job(21)->finished_at, 200);
    EXPECT_EQ(v8.job_timeline(21).size(), 1u);
    EXPECT_TRUE(v8.unfinished_reconfigurations().empty());
    EXPECT_EQ(v8.done_reconfigurations(21).restarts, 1);
    ASSERT_TRUE(v8.job_wait(21));
    EXPECT_DOUBLE_EQ(v8.job_wait(21)->waited_s, 30);
    EXPECT_EQ(v8.refit_points().size(), 1u);
    v8.record_job(job(22));  // the new column's default fills in
  }
  {
    StateStore again = StateStore::open(db_path_, migrations);  // nothing left to apply
    EXPECT_EQ(again.all_timelines().size(), 2u);
  }
  // This Morph knows version 7: a database written by a newer one is refused.
  const std::string error = error_of([&] { StateStore::open(db_path_); });
  EXPECT_CONTAINS(error, db_path_);
  EXPECT_CONTAINS(error, "schema version 8, newer than the 7 this Morph knows");
  EXPECT_CONTAINS(error, "written by a newer morphd: run that version, or set StateDatabase= to another file");
}

// morph status, explain and models open the database read-only: they never migrate it
// (a running older morphd keeps the schema it knows) and cannot write it.
TEST_F(StateStoreTest, ReadOnlyOpeningNeverMigratesNorWrites) {
  { std::ofstream(db_path_).flush(); }
  ::chmod(db_path_.c_str(), 0600);
  EXPECT_CONTAINS(error_of([&] { StateStore::open_read_only(db_path_); }), "schema version 0: an empty file");
  { StateStore::open(db_path_, schema_migrations().first(2)).record_job(job(31)); }
  const std::string older = error_of([&] { StateStore::open_read_only(db_path_); });
  EXPECT_CONTAINS(older, db_path_);
  EXPECT_CONTAINS(older, "schema version 2, older than this Morph's 7");
  // Still version 2: the refusal changed nothing.
  EXPECT_EQ(StateStore::open_read_only(db_path_, schema_migrations().first(2)).schema_version(), 2);
  { StateStore::open(db_path_); }  // morphd of this version migrates it
  StateStore reader = StateStore::open_read_only(db_path_);
  EXPECT_EQ(reader.schema_version(), 7);
  ASSERT_TRUE(reader.job(31));
  EXPECT_EQ(reader.job(31)->global_batch, 512);
  EXPECT_CONTAINS(error_of([&] { reader.record_job(job(32)); }), "readonly");
  EXPECT_FALSE(StateStore::open(db_path_).job(32));
  const std::array migrations = {schema_migrations()[0], schema_migrations()[1], schema_migrations()[2],
                                 schema_migrations()[3], schema_migrations()[4], schema_migrations()[5],
                                 schema_migrations()[6], kFakeV8};
  { StateStore::open(db_path_, migrations); }
  const std::string newer = error_of([&] { StateStore::open_read_only(db_path_); });
  EXPECT_CONTAINS(newer, db_path_);
  EXPECT_CONTAINS(newer, "schema version 8, newer than the 7 this Morph knows");
  EXPECT_CONTAINS(newer, "written by a newer morphd: read it with that version's morph");
  EXPECT_CONTAINS(error_of([&] { StateStore::open_read_only((dir_ / "none.db").string()); }),
                  "No such file or directory");
}

// morph forget changes what morphd wrote and nothing else: a file of another program
// (schema version 0) was filled with Morph's 20 tables, an older schema migrated.
TEST_F(StateStoreTest, AnExistingDatabaseIsOpenedForWritingOnlyAtThisMorphsSchema) {
  {
    Database foreign = Database::open(db_path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    foreign.exec("CREATE TABLE invoices (id INTEGER)", "create another program's table");
  }
  ::chmod(db_path_.c_str(), 0600);
  EXPECT_CONTAINS(error_of([&] { StateStore::open_existing(db_path_); }),
                  "schema version 0: an empty file or another program's database");
  {
    Database foreign = Database::open(db_path_, SQLITE_OPEN_READONLY);
    Statement tables = foreign.prepare("SELECT count(*) FROM sqlite_master", "count the tables");
    ASSERT_TRUE(tables.step());
    EXPECT_EQ(tables.column_int(0), 1) << "the refusal wrote Morph's schema into the file";
  }
  std::filesystem::remove(db_path_);
  { StateStore::open(db_path_, schema_migrations().first(2)).record_job(job(31)); }
  EXPECT_CONTAINS(error_of([&] { StateStore::open_existing(db_path_); }),
                  "schema version 2, older than this Morph's 7; morphd migrates it when this version of morphd starts "
                  "(this command does not migrate)");
  EXPECT_EQ(StateStore::open_read_only(db_path_, schema_migrations().first(2)).schema_version(), 2);
  { StateStore::open(db_path_); }
  StateStore writer = StateStore::open_existing(db_path_);
  writer.record_job(job(32));
  EXPECT_TRUE(StateStore::open_read_only(db_path_).job(32));
  EXPECT_CONTAINS(error_of([&] { StateStore::open_existing((dir_ / "none.db").string()); }),
                  "No such file or directory");
}

// The size caps morphd holds replace those recorded; a job not recorded has none kept,
// and forgetting a job forgets its cap.
TEST_F(StateStoreTest, SizeCapsAreReplacedAsAWholeAndGoWithTheirJob) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(1));
  store.record_job(job(2));
  store.replace_size_caps(std::vector<SizeCapRow>{{2, 0, 1, false}, {1, 4, 0, true}, {9, 2, 0, false}});
  EXPECT_EQ(store.size_caps(), (std::vector<SizeCapRow>{{1, 4, 0, true}, {2, 0, 1, false}}));
  store.replace_size_caps(std::vector<SizeCapRow>{{1, 3, 0, false}});
  EXPECT_EQ(store.size_caps(), (std::vector<SizeCapRow>{{1, 3, 0, false}}));
  store.forget_job(1);
  EXPECT_TRUE(store.size_caps().empty());
}

// A job whose reconfiguration is unfinished is never forgotten: its journal entry is
// what releases a job morphd held. Refused naming the entry, nothing removed; once the
// entry ends, the job goes with all its rows.
TEST_F(StateStoreTest, AJobIsNotForgottenWhileItsReconfigurationIsUnfinished) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(4));
  store.record_plan(plan(4, 100, 10));
  EXPECT_FALSE(store.unfinished_reconfiguration(4));
  const auto id = store.journal_begin(4, ReconfigurationPath::requeue, "a", "b", 100);
  for (const JournalState s : {JournalState::signalled, JournalState::requeued, JournalState::held})
    store.journal_advance(id, s, 110);
  ASSERT_TRUE(store.unfinished_reconfiguration(4));
  EXPECT_EQ(store.unfinished_reconfiguration(4)->id, id);
  const std::string error = error_of([&] { store.forget_job(4); });
  EXPECT_CONTAINS(error, db_path_ + ": forget job 4: its reconfiguration, journal entry " + std::to_string(id) +
                             " (requeue), is still at held");
  ASSERT_TRUE(store.job(4));
  EXPECT_EQ(store.job_timeline(4).size(), 1u);
  EXPECT_EQ(store.unfinished_reconfigurations().size(), 1u);
  store.journal_advance(id, JournalState::rolled_back, 120);
  EXPECT_FALSE(store.unfinished_reconfiguration(4));
  store.forget_job(4);
  EXPECT_FALSE(store.job(4));
  EXPECT_TRUE(store.job_timeline(4).empty());
}

// morph forget: a model's rows of one source and its refit points go, in one transaction;
// its other fits and the other models' points stay.
TEST_F(StateStoreTest, ForgettingAModelKeepsItsOtherFitsAndTheOtherModels) {
  StateStore store = StateStore::open(db_path_);
  store.record_fitted_params({"gpt2-1.5b", params_json("gpt2-1.5b", 2), "morph-profile", 100, 0.1});
  store.record_fitted_params({"gpt2-1.5b", params_json("gpt2-1.5b", 3), "online", 200, 0.05});
  store.record_fitted_params({"gpt2-1.5b", params_json("gpt2-1.5b", 4), "online", 300, 0.04});
  store.record_fitted_params({"bert-336m", params_json("bert-336m", 1), "online", 300, 0.04});
  RefitPointRow bert = refit_point("7", 0.2, 1000);
  bert.model = "bert-336m";
  store.record_refit_points(std::vector<RefitPointRow>{refit_point("5", 0.5, 1000), refit_point("6", 0.6, 1001), bert},
                            16);
  const StateStore::Forgotten forgotten = store.forget_learnt("gpt2-1.5b", "online");
  EXPECT_EQ(forgotten.fitted_params, 2);
  EXPECT_EQ(forgotten.refit_points, 2);
  ASSERT_TRUE(store.latest_params("gpt2-1.5b"));
  EXPECT_EQ(store.latest_params("gpt2-1.5b")->source, "morph-profile");  // the profile's fit is in use again
  ASSERT_TRUE(store.latest_params("bert-336m"));
  EXPECT_EQ(store.latest_params("bert-336m")->source, "online");
  ASSERT_EQ(store.refit_points().size(), 1u);
  EXPECT_EQ(store.refit_points()[0].model, "bert-336m");
  const StateStore::Forgotten again = store.forget_learnt("gpt2-1.5b", "online");
  EXPECT_EQ(again.fitted_params + again.refit_points, 0);
}

// PurgeJobsAfterDays: the jobs that ended before the cutoff go with every row of theirs,
// the longest ended first and at most `limit` at once; a live job, one that ended later,
// and one whose reconfiguration is unfinished stay, as do the refit's points.
TEST_F(StateStoreTest, PurgingEndedJobsTakesTheirRowsAndLeavesTheRest) {
  StateStore store = StateStore::open(db_path_);
  for (JobId id : {1, 2, 3, 4, 5}) {
    store.record_job(job(id));
    store.record_plan(plan(id, 100, 10));
    store.record_observations(std::array{Observation{id, 110, 1, 1.0, 512, "d4"}});
    store.record_decision({0, 105, id, "start", "free GPUs", "[]"});
  }
  store.record_waits(std::vector<JobWait>{{1, 5, 100, false}, {2, 5, 100, false}});
  store.replace_size_caps(std::vector<SizeCapRow>{{1, 4, 0, false}});
  store.journal_advance(store.journal_begin(1, ReconfigurationPath::inplace, "a", "b", 100), JournalState::done, 101);
  store.journal_begin(3, ReconfigurationPath::requeue, "a", "b", 120);  // unfinished
  store.finish_job(1, 200);
  store.finish_job(2, 150);
  store.finish_job(3, 160);
  store.finish_job(4, 900);  // ended after the cutoff; 5 lives
  store.record_refit_points(std::vector<RefitPointRow>{refit_point("1", 0.5, 110)}, 16);

  EXPECT_EQ(store.purge_ended_jobs(500, 1), 1);  // the longest ended: 2
  EXPECT_FALSE(store.job(2));
  EXPECT_TRUE(store.job(1));
  EXPECT_EQ(store.purge_ended_jobs(500, 10), 1);  // 1; 3 has an unfinished reconfiguration
  for (JobId gone : {1, 2}) {
    EXPECT_FALSE(store.job(gone)) << gone;
    EXPECT_TRUE(store.job_timeline(gone).empty()) << gone;
    EXPECT_TRUE(store.observations(gone, 0, std::nullopt, 10).empty()) << gone;
    EXPECT_FALSE(store.job_wait(gone)) << gone;
    EXPECT_EQ(store.done_reconfigurations(gone).restarts, 0) << gone;
  }
  EXPECT_TRUE(store.size_caps().empty());
  for (JobId kept : {3, 4, 5}) {
    ASSERT_TRUE(store.job(kept)) << kept;
    EXPECT_EQ(store.job_timeline(kept).size(), 1u) << kept;
    EXPECT_EQ(store.observations(kept, 0, std::nullopt, 10).size(), 1u) << kept;
  }
  EXPECT_EQ(store.unfinished_reconfigurations().size(), 1u);
  EXPECT_EQ(store.refit_points().size(), 1u);  // the model's evidence has its own age limit
  EXPECT_EQ(store.purge_ended_jobs(500, 10), 0);
  EXPECT_EQ(store.purge_ended_jobs(1000, 10), 1);  // 4 now
  // The purge's query, as state_store.cc phrases it, finds its jobs and their open entries by index.
  const std::string plan = query_plan(
      db_path_,
      "SELECT job_id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < 5 AND NOT EXISTS "
      "(SELECT 1 FROM journal WHERE journal.job_id = jobs.job_id AND state NOT IN ('done', 'rolled_back')) "
      "ORDER BY finished_at, job_id LIMIT 3");
  EXPECT_CONTAINS(plan, "SEARCH jobs USING COVERING INDEX jobs_by_end");
  EXPECT_CONTAINS(plan, "SEARCH journal USING INDEX");
}

// One morphd per state database (writer_lock.h): the second is refused with the first
// one's pid, and the lock of a holder that dies goes with it.
// A hard link planted at the lock's name (a file of root's, linked there by the database's
// owner) would have root's morph forget give that file away and truncate it.
TEST_F(StateStoreTest, ALockFileOfSeveralLinksIsRefusedAndLeftAsItIs) {
  const std::string other = db_path_ + ".someone-elses";
  { std::ofstream(other) << "precious"; }
  ASSERT_EQ(::link(other.c_str(), (db_path_ + ".lock").c_str()), 0);
  EXPECT_CONTAINS(error_of([&] { WriterLock::acquire(db_path_, "stop it"); }),
                  db_path_ + ".lock: not morphd's lock file (a regular file of one link): remove it");
  std::ifstream in(other);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  ::unlink((db_path_ + ".lock").c_str());
}

TEST_F(StateStoreTest, ASecondWriterIsRefusedNamingTheFirstUntilItIsGone) {
  const auto lock_file_text = [&] {
    std::ifstream in(db_path_ + ".lock");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string me = std::to_string(::getpid());
  {
    WriterLock first = WriterLock::acquire(db_path_, "stop it");
    EXPECT_EQ(first.path(), db_path_ + ".lock");
    EXPECT_EQ(lock_file_text(), me + "\n");
    const std::string error = error_of([&] { WriterLock::acquire(db_path_, "stop it"); });
    EXPECT_CONTAINS(error, db_path_ + ": morphd (pid " + me + ") runs on this state database (" + db_path_ +
                               ".lock is locked): stop it");
    const WriterLock moved(std::move(first));
    EXPECT_NE(error_of([&] { WriterLock::acquire(db_path_, "stop it"); }), "");  // the moved lock still holds
  }
  EXPECT_EQ(error_of([&] { WriterLock::acquire(db_path_, "stop it"); }), "");

  // A holder killed with SIGKILL leaves nothing to clean up.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const WriterLock lock = WriterLock::acquire(db_path_, "stop it");
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_CONTAINS(error_of([&] { WriterLock::acquire(db_path_, "stop it"); }),
                  "morphd (pid " + std::to_string(child) + ")");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  const WriterLock next = WriterLock::acquire(db_path_, "stop it");
  EXPECT_EQ(lock_file_text(), me + "\n");

  // root leaves the lock file to the database's owner (SlurmUser's morphd must open it).
  if (::geteuid() == 0) {
    { std::ofstream(db_path_ + ".other").flush(); }
    ASSERT_EQ(::chown((db_path_ + ".other").c_str(), 65534, 65534), 0);
    { const WriterLock as_root = WriterLock::acquire(db_path_ + ".other", "stop it"); }
    struct stat st {};
    ASSERT_EQ(::stat((db_path_ + ".other.lock").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 65534u);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }

  const std::string nowhere = (dir_ / "none" / "morph.db").string();
  EXPECT_CONTAINS(error_of([&] { WriterLock::acquire(nowhere, "stop it"); }),
                  nowhere + ".lock: open morphd's lock file: No such file or directory");
}

// The online refit's points: a job's new value replaces its old one on the same
// configuration, a configuration keeps its newest `keep`, oldest first when read.
TEST_F(StateStoreTest, RefitPointsReplaceTheirJobsAndKeepTheNewest) {
  StateStore store = StateStore::open(db_path_);
  std::vector<RefitPointRow> rows;
  for (int job = 1; job <= 5; ++job) rows.push_back(refit_point(std::to_string(job), job, 1000 + job));
  RefitPointRow other = refit_point("9", 9, 1000);
  other.configuration = "gpt2 dp=4 on 4xa100 (4 CPUs per GPU)";
  rows.push_back(other);
  store.record_refit_points(rows, 3);
  std::vector<RefitPointRow> read = store.refit_points();
  ASSERT_EQ(read.size(), 4u);  // jobs 3, 4, 5 and the other configuration's 9
  EXPECT_EQ(read[0].job, "9");
  EXPECT_EQ(read[1].job, "3");
  EXPECT_EQ(read[3].job, "5");
  EXPECT_EQ(read[3].model, "gpt2-1.5b");
  EXPECT_EQ(read[3].app, "gpt2-1.5b b16");
  EXPECT_EQ(read[3].global_batch, 16);
  EXPECT_EQ(read[3].seq_len, 1024);
  EXPECT_EQ(read[3].plan, "dp=8");
  EXPECT_EQ(read[3].allocation, "[]");
  EXPECT_DOUBLE_EQ(read[3].iteration_s, 5);
  EXPECT_DOUBLE_EQ(read[3].recorded_at, 1005);
  // Job 3 reports again: its value replaces the old one and it is now the newest.
  store.record_refit_points(std::vector<RefitPointRow>{refit_point("3", 3.5, 1010)}, 3);
  read = store.refit_points();
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read.back().job, "3");
  EXPECT_DOUBLE_EQ(read.back().iteration_s, 3.5);
  // A bad point refuses the whole batch; keep must be at least 1.
  EXPECT_CONTAINS(error_of([&] {
                    store.record_refit_points(std::vector<RefitPointRow>{refit_point("6", 6, 1020),
                                                                         refit_point("7", -1, 1020)},
                                              3);
                  }),
                  "CHECK constraint failed");
  EXPECT_EQ(store.refit_points().size(), 4u);
  EXPECT_CONTAINS(error_of([&] { store.record_refit_points(rows, 0); }), "keep at least 1 point per configuration");
  // RefitPointMaxAgeDays: points recorded before the cutoff go (9 at 1000, 4 and 5 at 1004
  // and 1005), the newer stay.
  EXPECT_EQ(store.expire_refit_points(1006), 3);
  read = store.refit_points();
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].job, "3");
  EXPECT_EQ(store.expire_refit_points(1010), 0);  // recorded at 1010: not before it
}

TEST_F(StateStoreTest, WaitingTimesAreReplacedAllOrNone) {
  StateStore store = StateStore::open(db_path_);
  store.record_job(job(41));
  store.record_job(job(42));
  store.record_waits(std::vector<JobWait>{{41, 10.5, 1000.25, true}, {42, 5, 1000.25, true}});
  store.record_waits(std::vector<JobWait>{{41, 70.5, 1060.25, false}});
  const std::optional<JobWait> w = store.job_wait(41);
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->waited_s, 70.5);
  EXPECT_DOUBLE_EQ(w->observed_at, 1060.25);
  EXPECT_FALSE(w->pending);
  EXPECT_DOUBLE_EQ(store.job_wait(42)->waited_s, 5);
  EXPECT_FALSE(store.job_wait(43));
  // A job not recorded, or a negative time, refuses the whole batch: job 42 keeps its 5 s.
  EXPECT_CONTAINS(error_of([&] { store.record_waits(std::vector<JobWait>{{42, 9, 1100, true}, {43, 1, 2, true}}); }),
                  "record the waiting times of 2 jobs");
  EXPECT_CONTAINS(error_of([&] { store.record_waits(std::vector<JobWait>{{42, 9, 1100, true}, {41, -1, 1, true}}); }),
                  "CHECK constraint failed");
  EXPECT_DOUBLE_EQ(store.job_wait(42)->waited_s, 5);
}

TEST_F(StateStoreTest, MigrationsMustBeConsecutive) {
  const std::array gap = {schema_migrations()[0], Migration{3, "CREATE TABLE x (y INTEGER)"}};
  EXPECT_CONTAINS(error_of([&] { StateStore::open(db_path_, gap); }), "versions must run 1, 2");
}

// morphd writes while morph status reads, each with its own connection.
TEST_F(StateStoreTest, AReaderAndAWriterAtOnce) {
  StateStore writer = StateStore::open(db_path_);
  StateStore reader = StateStore::open(db_path_);
  writer.record_job(job(31));
  writer.record_plan(plan(31, 0, 10));
  ASSERT_TRUE(reader.job(31));  // sees what the other connection committed

  constexpr int kWrites = 200;
  std::atomic<bool> writer_failed{false};
  std::thread writes([&] {
    try {
      for (int i = 0; i < kWrites; ++i) {
        writer.record_observations(std::array{Observation{31, i + 1, i, 1.0, 10, "d1"}});
        if (i % 20 == 0) writer.record_decision({0, i, 31, "keep", "no better plan", "[]"});
      }
    } catch (const Error&) {
      writer_failed = true;
    }
  });
  int last_seen = 0;
  for (int reads = 0; reads < 400 && last_seen < kWrites; ++reads) {
    const auto throughput = reader.job_throughput(31, kWrites);
    ASSERT_TRUE(throughput);
    EXPECT_GE(throughput->observations, last_seen);  // committed rows never disappear
    last_seen = throughput->observations;
    reader.all_timelines();
  }
  writes.join();
  EXPECT_FALSE(writer_failed);
  EXPECT_EQ(reader.job_throughput(31, kWrites)->observations, kWrites);
  EXPECT_EQ(reader.decisions(31).size(), 10u);
}

}  // namespace
}  // namespace morph::store
