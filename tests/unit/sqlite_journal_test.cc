// morphd's journal in SQLite (daemon/sqlite_journal.h): a morphd killed in the middle of
// a requeue is succeeded by one that reopens the database and finishes the work; the
// decisions keep their alternatives.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "daemon/job_tracker.h"
#include "daemon/reconfigurer.h"
#include "daemon/sqlite_journal.h"
#include "libmorph/record/job_record.h"

namespace morph::daemon {
namespace {

namespace fs = std::filesystem;

class Slurm : public SlurmOps {
 public:
  SlurmJob state{7, 1000, JobPhase::running, false, "", {"n1"}};
  int signals = 0, updates = 0, holds = 0, releases = 0;
  std::optional<SlurmJob> job(std::uint32_t, bool* gone) override {
    *gone = false;
    return state;
  }
  std::string set_record(std::uint32_t, const std::string& text, bool) override {
    ++updates;
    state.admin_comment = text;
    return {};
  }
  std::string signal_batch(std::uint32_t, int) override {
    ++signals;
    return {};
  }
  std::string requeue_hold(std::uint32_t) override { return {}; }
  std::string hold(std::uint32_t) override {
    ++holds;
    state.held = true;
    return {};
  }
  std::string release(std::uint32_t) override {
    ++releases;
    state.held = false;
    return {};
  }
};

std::string record(int gpus) {
  JobRecord r;
  r.request.model = "gpt2-1.5b";
  r.request.global_batch = 16;
  r.current.gpu_type = "a100-80g";
  r.current.nodes = 1;
  r.current.gpus_per_node = gpus;
  r.current.cpus_per_gpu = 4;
  r.current.plan.dp = gpus;
  r.current.plan.micro_batch_size = 16 / gpus;
  r.current.iter_ms = 400.0 / gpus;
  return to_admin_comment(r);
}

// A job's reason to wait goes into the database; the journal knows the last one after a
// restart (morphd records a waiting job again only when its reason changes).
TEST(SqliteJournal, RemembersTheLastReasonAcrossARestart) {
  const fs::path db = fs::temp_directory_path() / ("morph-reasons-" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  {
    store::StateStore state = store::StateStore::open(db.string());
    SqliteJournal journal(state);
    EXPECT_EQ(journal.last_reason(9), "");
    journal.record_decision({9, "wait", "wait: no room", {}, 50}, record(2));
    EXPECT_EQ(journal.last_reason(9), "wait: no room");
  }
  {
    store::StateStore state = store::StateStore::open(db.string());
    SqliteJournal journal(state);
    EXPECT_EQ(journal.last_reason(9), "wait: no room");
    ASSERT_TRUE(state.job(9));  // recorded with the decision
    EXPECT_EQ(state.decisions(9).size(), 1u);
    EXPECT_EQ(state.decisions(9)[0].action, "wait");
    EXPECT_EQ(state.decisions(9)[0].alternatives_json, "[]");
  }
  fs::remove(db);
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
}

// A job the journal records first (the round's tracking failed: the database busy a
// moment) is recorded with its user, so that the job tracker takes it for the same job,
// not for an earlier one under a reused id: its history stays, the journal's too. (It
// was recorded as uid 0's: the tracker forgot it, with the entry of a requeue under way,
// and the job stayed held for ever.)
TEST(SqliteJournal, AJobItRecordsFirstKeepsItsHistoryWhenTheTrackerSeesIt) {
  const fs::path db = fs::temp_directory_path() / ("morph-first-" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  store::StateStore state = store::StateStore::open(db.string());
  SqliteJournal journal(state);
  JobTracker tracker(state);
  Slurm slurm;
  slurm.state.admin_comment = record(2);
  Reconfigurer reconfigurer(slurm, journal, {}, nullptr);
  Reconfiguration change{7, Path::requeue, record(2), record(4), "grow: 2 -> 4 GPUs"};
  change.user_uid = slurm.state.user_id;
  reconfigurer.start(change, 100);
  slurm.state.phase = JobPhase::pending;  // the job saved, exited 75 and was requeued
  slurm.state.eligible_time_s = 220;       // it may start again at its BeginTime
  reconfigurer.advance_all(101);
  ASSERT_TRUE(slurm.state.held);
  ASSERT_TRUE(state.job(7));
  EXPECT_EQ(state.job(7)->user_uid, 1000u);

  ClusterSnapshot snapshot;
  snapshot.jobs = {slurm.state};
  snapshot.now_s = 103;
  tracker.track(snapshot);  // the next round
  EXPECT_EQ(reconfigurer.busy(), std::set<std::uint32_t>{7});
  reconfigurer.advance_all(230);
  EXPECT_FALSE(slurm.state.held);
  EXPECT_TRUE(reconfigurer.busy().empty());
  EXPECT_EQ(journal.done(7).restarts, 1);
  snapshot.now_s = 240;
  JobTracker(state).track(snapshot);  // a restarted morphd keeps it all too
  EXPECT_EQ(journal.done(7).restarts, 1);
  EXPECT_EQ(state.decisions(7).size(), 1u);
  fs::remove(db);
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
}

// The reasons the journal holds in memory are those of the jobs Slurm lists: one that
// Slurm no longer lists is dropped, and read again from the database if asked.
TEST(SqliteJournal, ForgetsTheReasonsOfJobsSlurmNoLongerLists) {
  const fs::path db = fs::temp_directory_path() / ("morph-forget-" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  store::StateStore state = store::StateStore::open(db.string());
  SqliteJournal journal(state);
  journal.record_decision({8, "wait", "wait: no room", {}, 50, 1000}, record(2));
  journal.record_decision({9, "wait", "wait: no room", {}, 50, 1000}, record(2));
  ASSERT_TRUE(state.job(9));
  EXPECT_EQ(state.job(9)->user_uid, 1000u);
  journal.forget_jobs_except({9});
  EXPECT_EQ(journal.reasons_in_memory(), 1u);
  EXPECT_EQ(journal.last_reason(9), "wait: no room");
  EXPECT_EQ(journal.last_reason(8), "wait: no room");  // from the database
  fs::remove(db);
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
}

TEST(SqliteJournal, ASuccessorReopensTheDatabaseAndFinishesARequeue) {
  const fs::path db = fs::temp_directory_path() / ("morph-journal-" + std::to_string(::getpid()) + ".db");
  fs::remove(db);
  Slurm slurm;
  slurm.state.admin_comment = record(2);
  const std::vector<policy::Alternative> alternatives = {
      {"a100-80g", 4, "dp=4 tp=1 pp=1 zero=0 ga=1 mbs=4", 0.1, 160, policy::Loss::none, ""},
      {"a100-80g", 8, "dp=8 tp=1 pp=1 zero=0 ga=1 mbs=2", 0.06, 266, policy::Loss::no_room, "needs 8 GPUs, 4 free"}};
  const Reconfiguration change{7, Path::requeue, record(2), record(4), "grow: 2 -> 4 GPUs", alternatives};
  {  // the first morphd: signals, then dies
    store::StateStore state = store::StateStore::open(db.string());
    SqliteJournal journal(state);
    Reconfigurer(slurm, journal, {}, nullptr).start(change, 100);
    EXPECT_EQ(journal.unfinished().size(), 1u);
  }
  slurm.state.phase = JobPhase::pending;  // the job saved, exited 75 and was requeued
  {  // its successor
    store::StateStore state = store::StateStore::open(db.string());
    SqliteJournal journal(state);
    const auto unfinished = journal.unfinished();
    ASSERT_EQ(unfinished.size(), 1u);
    EXPECT_EQ(unfinished[0].step, Step::signalled);
    EXPECT_EQ(unfinished[0].change.to_record, record(4));
    Reconfigurer(slurm, journal, {}, nullptr).advance_all(130);
    EXPECT_TRUE(journal.unfinished().empty());
    EXPECT_DOUBLE_EQ(journal.done(7).last_s, 130);
    EXPECT_EQ(journal.done(7).restarts, 1);
    // The job, the decision and the new plan are in the database for morph status.
    ASSERT_TRUE(state.job(7));
    EXPECT_EQ(state.job(7)->model, "gpt2-1.5b");
    ASSERT_TRUE(state.latest_decision(7));
    EXPECT_EQ(state.latest_decision(7)->reason, "grow: 2 -> 4 GPUs");
    EXPECT_EQ(policy::alternatives_from_json(state.latest_decision(7)->alternatives_json, "test"), alternatives);
    const auto timeline = state.job_timeline(7);
    ASSERT_EQ(timeline.size(), 1u);
    EXPECT_EQ(timeline[0].gpus_per_node, 4);
    EXPECT_DOUBLE_EQ(timeline[0].predicted_samples_per_s, 16 / 0.1);
  }
  EXPECT_EQ(slurm.signals, 1);
  EXPECT_EQ(slurm.updates, 1);
  EXPECT_EQ(slurm.holds, 1);
  EXPECT_EQ(slurm.releases, 1);
  EXPECT_FALSE(slurm.state.held);
  EXPECT_EQ(slurm.state.admin_comment, record(4));
  fs::remove(db);
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
}

}  // namespace
}  // namespace morph::daemon
