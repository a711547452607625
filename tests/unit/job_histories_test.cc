// What the state database holds about a round's jobs (daemon/job_histories.h): their
// histories read back, across a reopened database.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>

#include "daemon/job_histories.h"
#include "daemon/job_tracker.h"
#include "tests/unit/daemon_support.h"

namespace morph::daemon {
namespace {

namespace fs = std::filesystem;

const ExecutionPlan kEight = test::make_plan(8, 1, 1, 1, 1, 2);
const ExecutionPlan kPipelined = test::make_plan(4, 1, 2, 1, 2, 2);

class JobHistoriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "morph-histories-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db() const { return (dir_ / "morph.db").string(); }

  // Job 11 running since 100, 12 pending, 13 done, 14 not Morph's, 15 with a broken record.
  static ClusterSnapshot jobs() {
    ClusterSnapshot s;
    s.now_s = 1000;
    SlurmJob done = test::running_job(13, "a100-1", kEight, 200);
    done.phase = JobPhase::done;
    SlurmJob other = test::running_job(14, "a100-2", kEight, 200);
    other.admin_comment = "";
    SlurmJob broken = test::pending_job(15, kEight);
    broken.admin_comment = "morph:v1 model=gpt2-1.5b";
    s.jobs = {test::running_job(11, "a100-1", kEight, 100), test::pending_job(12, kEight), done, other, broken};
    return s;
  }

  // A round at `now_s` that lists `jobs`.
  static ClusterSnapshot at(double now_s, std::vector<SlurmJob> jobs) {
    ClusterSnapshot s;
    s.now_s = now_s;
    s.jobs = std::move(jobs);
    return s;
  }

  fs::path dir_;
};

TEST_F(JobHistoriesTest, HistoriesHoldEachPlansLastIterationsAndSurviveAReopen) {
  {
    store::StateStore state = store::StateStore::open(db());
    JobTracker(state).track(jobs());  // job 11's request from 100
    JobHistory reported;
    test::report(reported, 11, 100, kEight, 1.0, 30);       // 100..129 under the request
    test::report(reported, 11, 200, kPipelined, 0.5, 30);   // 200..229 under Morph's plan
    state.record_observations(reported.observations);
    JobRecord replanned = parse_admin_comment(test::gpt2_record(kEight, Sla::guaranteed));
    replanned.baseline = replanned.current;
    replanned.current.plan = kPipelined;
    state.record_plan({11, 150, to_admin_comment(replanned), "a100-80g", 1, 8, 0, std::nullopt});
  }
  const store::StateStore state = store::StateStore::open(db());  // morphd restarted
  const JobHistories histories = read_histories(state, jobs(), nullptr, 20);
  ASSERT_EQ(histories.size(), 2u);  // 11 and 12: recorded and alive
  const JobHistory& h = histories.at(11);
  ASSERT_EQ(h.plans.size(), 2u);
  ASSERT_EQ(h.observations.size(), 40u);  // the last 20 under each plan
  EXPECT_EQ(h.observations.front().time, 110);
  EXPECT_EQ(h.observations.back().time, 229);
  EXPECT_TRUE(histories.at(12).observations.empty());
  // What the restarted morphd measures: the promise is still the request's speed.
  policy::JobState job;
  job.sla = Sla::guaranteed;
  job.requested_plan = kEight;
  job.current = policy::JobAllocation{{policy::Slice{0, 8, 32, 0}}, kPipelined};
  job.ready_s = 100;
  const JobMeasurement m = measure_job(job, h, {});
  EXPECT_DOUBLE_EQ(m.promised_iteration_s, 1.0);
  EXPECT_DOUBLE_EQ(m.iteration_s, 0.5);
  EXPECT_EQ(m.observations, 20);
}

// Anti-starvation counts a job's time without GPUs since its submission: pending time
// adds up across a start and a requeue, although Slurm resets a requeued job's submit time.
TEST_F(JobHistoriesTest, AJobsWaitingAddsUpAcrossStartsAndRequeues) {
  auto at = [](double now_s, const SlurmJob& job) {
    ClusterSnapshot s;
    s.now_s = now_s;
    s.jobs = {job};
    return s;
  };
  SlurmJob job = test::pending_job(12, kEight);  // submitted at 100
  {
    store::StateStore state = store::StateStore::open(db());
    JobTracker tracker(state);
    tracker.track(at(1000, job));  // first seen: 900 s since its submission
    EXPECT_DOUBLE_EQ(state.job_wait(12)->waited_s, 900);
    job = test::running_job(12, "a100-1", kEight, 1030);
    tracker.track(at(1060, job));  // pending until the last count: +60
    EXPECT_DOUBLE_EQ(state.job_wait(12)->waited_s, 960);
    EXPECT_FALSE(state.job_wait(12)->pending);
    tracker.track(at(1120, job));  // running: no more
    EXPECT_DOUBLE_EQ(state.job_wait(12)->waited_s, 960);
    job = test::pending_job(12, kEight);
    job.submit_time_s = 1190;      // requeued: Slurm's new submit time
    tracker.track(at(1200, job));  // running at the last count: +0
    EXPECT_DOUBLE_EQ(state.job_wait(12)->waited_s, 960);
  }
  store::StateStore state = store::StateStore::open(db());  // morphd restarted
  JobTracker(state).track(at(1300, job));  // pending since the last count: +100
  EXPECT_DOUBLE_EQ(state.job_wait(12)->waited_s, 1060);
  EXPECT_DOUBLE_EQ(read_histories(state, at(1300, job)).at(12).waited_s.value_or(-1), 1060);

  // A job first seen running waited from its submission to its start.
  JobTracker(state).track(at(1300, test::running_job(11, "a100-1", kEight, 250)));
  EXPECT_DOUBLE_EQ(state.job_wait(11)->waited_s, 150);
}

// Slurm reuses job ids (they wrap, and start at 1 again when slurmctld's state is
// cleared): a job under the id of one that ended, or of another user or model, starts
// afresh, and its reports are not dropped as copies of the earlier job's.
TEST_F(JobHistoriesTest, AJobUnderAReusedIdIsANewJob) {
  const std::string layout = "dp=8,tp=1,pp=1,zero=0";
  store::StateStore state = store::StateStore::open(db());
  JobTracker tracker(state);
  tracker.track(at(1000, {test::running_job(11, "a100-1", kEight, 250)}));
  state.record_observations(std::vector<store::Observation>{{11, 1000, 1, 0.5, 16, layout}});
  state.finish_job(11, 2000);
  EXPECT_TRUE(state.unfinished_jobs().empty());
  tracker.track(at(2100, {}));  // Slurm no longer lists it
  tracker.track(at(3100, {test::running_job(11, "a100-1", kEight, 3000)}));
  ASSERT_TRUE(state.job(11));
  EXPECT_FALSE(state.job(11)->finished_at);
  EXPECT_EQ(state.unfinished_jobs(), std::vector<store::JobId>{11});
  EXPECT_TRUE(state.observations(11, 0, std::nullopt, 10).empty());
  state.record_observations(std::vector<store::Observation>{{11, 3100, 1, 0.25, 16, layout}});
  ASSERT_EQ(state.observations(11, 0, std::nullopt, 10).size(), 1u);
  EXPECT_DOUBLE_EQ(state.observations(11, 0, std::nullopt, 10)[0].seconds, 0.25);
  // Unfinished, under another user: the database was another cluster's.
  SlurmJob other = test::running_job(11, "a100-1", kEight, 3000);
  other.user_id = 1001;
  JobTracker(state).track(at(3200, {other}));  // a morphd that starts on it
  EXPECT_EQ(state.job(11)->user_uid, 1001u);
  EXPECT_TRUE(state.observations(11, 0, std::nullopt, 10).empty());
  // The same job seen by the next morphd keeps all it had.
  state.record_observations(std::vector<store::Observation>{{11, 3300, 1, 0.25, 16, layout}});
  JobTracker(state).track(at(3400, {other}));
  EXPECT_EQ(state.observations(11, 0, std::nullopt, 10).size(), 1u);
}

// An administrator may requeue a job that completed (scontrol requeue): Slurm lists it
// ended, then pending under the same id. It is the same job, reopened, and keeps all that
// is recorded of it, an unfinished reconfiguration too, for this morphd and the next.
// (It was forgotten at the next morphd's first round, journal and all: a job that morphd
// held then was never released.)
TEST_F(JobHistoriesTest, AJobRequeuedAfterItEndedIsReopenedNotForgotten) {
  const std::string layout = "dp=8,tp=1,pp=1,zero=0";
  store::StateStore state = store::StateStore::open(db());
  JobTracker tracker(state);
  tracker.track(at(1000, {test::running_job(11, "a100-1", kEight, 250)}));
  state.record_observations(std::vector<store::Observation>{{11, 1000, 1, 0.5, 16, layout}});
  SlurmJob ended = test::running_job(11, "a100-1", kEight, 250);
  ended.phase = JobPhase::done;
  tracker.track(at(2000, {ended}));
  state.finish_job(11, 2000);  // what morphd's finish_jobs does in that round
  tracker.track(at(2100, {test::pending_job(11, kEight)}));
  ASSERT_TRUE(state.job(11));
  EXPECT_FALSE(state.job(11)->finished_at);
  EXPECT_EQ(state.unfinished_jobs(), std::vector<store::JobId>{11});
  const std::int64_t entry = state.journal_begin(11, store::ReconfigurationPath::start,
                                                 test::gpt2_record(kEight, Sla::best_effort),
                                                 test::gpt2_record(kPipelined, Sla::best_effort), 2100);
  JobTracker(state).track(at(2200, {test::pending_job(11, kEight)}));  // morphd restarted
  EXPECT_EQ(state.observations(11, 0, std::nullopt, 10).size(), 1u);
  ASSERT_EQ(state.unfinished_reconfigurations().size(), 1u);
  EXPECT_EQ(state.unfinished_reconfigurations()[0].id, entry);

  // A morphd that first sees it alive after its end (it never saw it listed ended) cannot
  // tell it from a new job under the id: that one starts afresh.
  state.finish_job(11, 2300);
  state.journal_advance(entry, store::JournalState::rolled_back, 2300);
  JobTracker(state).track(at(2400, {test::pending_job(11, kEight)}));
  EXPECT_FALSE(state.job(11)->finished_at);
  EXPECT_TRUE(state.observations(11, 0, std::nullopt, 10).empty());
}

// The tracker takes a row that differs from what Slurm lists (another user, model, or an
// end) for an earlier job under a reused id and forgets it, but never while morphd's
// reconfiguration of the id is under way: its journal entry is all that releases a job
// morphd held. The row stays as it is until the entry ends; then the job starts afresh.
// (A row the journal wrote first, in a round whose tracking failed, held uid 0: the
// tracker deleted it, entry and all, and the held job was never released.)
TEST_F(JobHistoriesTest, AJobWhoseReconfigurationIsUnderWayIsNeverForgotten) {
  store::StateStore state = store::StateStore::open(db());
  const std::string from = test::gpt2_record(kEight, Sla::best_effort);
  state.record_job({11, "gpt2-1.5b", 16, Sla::best_effort, 0, 900, std::nullopt});  // uid 0: not Slurm's 1000
  const std::int64_t entry =
      state.journal_begin(11, store::ReconfigurationPath::requeue, from, test::gpt2_record(kPipelined), 950);
  for (const store::JournalState s :
       {store::JournalState::signalled, store::JournalState::requeued, store::JournalState::held})
    state.journal_advance(entry, s, 960);
  const SlurmJob held = test::pending_job(11, kEight);
  JobTracker tracker(state);
  tracker.track(at(1000, {held}));
  ASSERT_EQ(state.unfinished_reconfigurations().size(), 1u);
  EXPECT_EQ(state.unfinished_reconfigurations()[0].id, entry);
  EXPECT_EQ(state.unfinished_reconfigurations()[0].state, store::JournalState::held);
  ASSERT_TRUE(state.job(11));
  JobTracker(state).track(at(1010, {held}));  // a restarted morphd leaves it too
  ASSERT_EQ(state.unfinished_reconfigurations().size(), 1u);

  state.journal_advance(entry, store::JournalState::rolled_back, 1020);
  tracker.track(at(1030, {held}));
  ASSERT_TRUE(state.job(11));
  EXPECT_EQ(state.job(11)->user_uid, 1000u);
  EXPECT_EQ(state.job(11)->submitted_at, 100);
  EXPECT_FALSE(state.done_reconfigurations(11).last_at);
}

// An adaptive job's batches come from its first report, then from what it reported
// since: 30,000 iterations (more than any window of newest reports) give all 300
// adaptation steps, 1,000 more add 10, and a history kept across rounds reads as one
// read whole. (Reading the newest 20,000 moved the epochs with the window.)
TEST_F(JobHistoriesTest, AnAdaptiveJobsBatchesComeFromItsFirstReportOnThenIncrementally) {
  ClusterSnapshot s = jobs();
  for (SlurmJob& j : s.jobs)
    if (j.id == 11) {
      JobRecord r = parse_admin_comment(j.admin_comment);
      r.request.framework = Framework::torch;
      set_morph_option(r.request, "adaptive-batch", "16:1024");
      j.admin_comment = to_admin_comment(r);
    }
  store::StateStore state = store::StateStore::open(db());
  JobTracker(state).track(s);
  auto batch_at = [](std::int64_t step) { return 16 + (step - 1) / 100 % 50; };  // a new batch every 100
  auto report = [&](std::int64_t from, std::int64_t to) {
    std::vector<store::Observation> reported;
    for (std::int64_t step = from; step <= to; ++step)
      reported.push_back({11, 100 + step / 100, step, 0.1, batch_at(step), "dp=8,tp=1,pp=1,zero=0"});
    state.record_observations(reported);
  };
  report(1, 30000);
  BatchHistories batches;
  const JobHistories first = read_histories(state, s, &batches);
  EXPECT_LE(first.at(11).step_batches.size(), 301u);  // the changes, not the reports
  BatchTrajectory t = batch_trajectory(first.at(11).step_batches);
  EXPECT_EQ(t.interval, 100);
  EXPECT_EQ(t.first, 1);
  EXPECT_EQ(t.batches.size(), 300u);
  report(30001, 31000);
  t = batch_trajectory(read_histories(state, s, &batches).at(11).step_batches);
  ASSERT_EQ(t.batches.size(), 310u);
  for (std::size_t k = 0; k < t.batches.size(); ++k)
    ASSERT_EQ(t.batches[k], static_cast<double>(batch_at(static_cast<std::int64_t>(k) * 100 + 1))) << k;
  EXPECT_EQ(batch_trajectory(read_histories(state, s).at(11).step_batches).batches, t.batches);
  EXPECT_TRUE(first.at(12).step_batches.empty());  // not adaptive
}

}  // namespace
}  // namespace morph::daemon
