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
  const JobHistories histories = read_histories(state, jobs(), 20);
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
  const JobMeasurement m = measure_job(job, h);
  EXPECT_DOUBLE_EQ(m.promised_iteration_s, 1.0);
  EXPECT_DOUBLE_EQ(m.iteration_s, 0.5);
  EXPECT_EQ(m.observations, 20);
}

}  // namespace
}  // namespace morph::daemon
