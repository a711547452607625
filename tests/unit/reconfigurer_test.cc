// The journaled reconfiguration state machine (daemon/reconfigurer.h) against a fake
// slurmctld: every path, a morphd that dies after any step, and the refusals.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "daemon/reconfigurer.h"
#include "libmorph/util/error.h"

namespace morph::daemon {
namespace {

class FakeSlurm : public SlurmOps {
 public:
  std::map<std::uint32_t, SlurmJob> jobs;
  bool answering = true;
  int signals = 0, holds = 0, releases = 0, forced = 0, updates = 0;
  // slurmctld timing out on a call: "update" (set_record), "hold", "release"; `lost`: the
  // call took effect but its answer did not come back.
  std::set<std::string> timing_out;
  bool lost = false;
  std::string timed_out(const std::string& call) const {
    return timing_out.count(call) ? "Socket timed out on send/recv operation" : "";
  }

  std::optional<SlurmJob> job(std::uint32_t id, bool* gone) override {
    *gone = false;
    if (!answering) return std::nullopt;
    const auto it = jobs.find(id);
    if (it == jobs.end()) {
      *gone = true;
      return std::nullopt;
    }
    return it->second;
  }
  std::string set_record(std::uint32_t id, const std::string& text, bool) override {
    ++updates;
    if (!timed_out("update").empty() && !lost) return timed_out("update");
    jobs.at(id).admin_comment = text;
    return timed_out("update");
  }
  std::string signal_batch(std::uint32_t, int) override {
    ++signals;
    return {};
  }
  std::string requeue_hold(std::uint32_t id) override {
    ++forced;
    if (!timed_out("requeue").empty()) return timed_out("requeue");
    jobs.at(id).phase = JobPhase::pending;
    jobs.at(id).held = true;
    return {};
  }
  std::string hold(std::uint32_t id) override {
    ++holds;
    if (!timed_out("hold").empty() && !lost) return timed_out("hold");
    jobs.at(id).held = true;
    jobs.at(id).held_by_user = false;  // an administrator's hold replaces the user's
    return timed_out("hold");
  }
  // As root: ends any hold, the user's too.
  std::string release(std::uint32_t id) override {
    ++releases;
    if (!timed_out("release").empty() && !lost) return timed_out("release");
    jobs.at(id).held = jobs.at(id).held_by_user = false;
    return timed_out("release");
  }
};

Reconfiguration change(Path path) { return {7, path, "morph:v1 old", "morph:v1 new", "test"}; }

class ReconfigurerTest : public ::testing::Test {
 protected:
  ReconfigurerTest() { slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::running, false, "morph:v1 old", {"n1"}, -200, -100}; }
  Reconfigurer fresh() { return Reconfigurer(slurm, journal, ReconfigurerOptions{12, 60, 30}, nullptr); }
  Step step_of(std::int64_t id) const { return journal.entries().at(id).step; }

  FakeSlurm slurm;
  MemoryJournal journal;
};

TEST_F(ReconfigurerTest, InPlaceAndShrinkOnlyRewriteTheRecord) {
  for (Path path : {Path::inplace, Path::shrink}) {
    slurm.jobs[7].admin_comment = "morph:v1 old";
    fresh().start(change(path), 10);
    EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new");
    EXPECT_EQ(slurm.signals, 0);
  }
  EXPECT_TRUE(journal.unfinished().empty());
  EXPECT_DOUBLE_EQ(journal.done(7).last_s, 10);
  EXPECT_EQ(journal.done(7).restarts, 2);
}

// A record-only update whose answer was lost took effect: read back the next round, the
// restart it makes the driver do is counted; one that failed is tried again.
TEST_F(ReconfigurerTest, AnInPlaceUpdateThatTimesOutIsReadBackOrTriedAgain) {
  Reconfigurer r = fresh();
  slurm.timing_out = {"update"};
  slurm.lost = true;  // made, but morphd hears a timeout
  r.start(change(Path::inplace), 0);
  EXPECT_EQ(step_of(1), Step::planned);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new");
  r.advance_all(10);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_EQ(slurm.updates, 1);
  EXPECT_EQ(journal.done(7).restarts, 1);

  slurm.jobs[7].admin_comment = "morph:v1 old";
  slurm.lost = false;  // not made
  r.start(change(Path::shrink), 20);
  EXPECT_EQ(step_of(2), Step::planned);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 old");
  slurm.timing_out.clear();
  r.advance_all(30);
  EXPECT_EQ(step_of(2), Step::done);
  EXPECT_EQ(slurm.updates, 3);
  EXPECT_EQ(journal.done(7).restarts, 2);
  // A pending job's update that fails is given up at once: slurmctld may refuse it for good.
  slurm.jobs[7].admin_comment = "morph:v1 old";
  slurm.jobs[7].phase = JobPhase::pending;
  slurm.timing_out = {"update"};
  r.start(change(Path::start), 40);
  EXPECT_EQ(step_of(3), Step::rolled_back);
}

TEST_F(ReconfigurerTest, RequeueWaitsForTheCheckpointThenHoldsUpdatesReleases) {
  Reconfigurer r = fresh();
  r.start(change(Path::requeue), 0);
  EXPECT_EQ(slurm.signals, 1);
  EXPECT_EQ(r.busy(), std::set<std::uint32_t>{7});
  r.advance_all(5);  // still saving
  EXPECT_EQ(step_of(1), Step::signalled);
  slurm.jobs[7].phase = JobPhase::pending;  // exited 75, RequeueExit requeued it
  r.advance_all(6);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new");
  EXPECT_FALSE(slurm.jobs[7].held);
  EXPECT_EQ(slurm.holds, 1);
  EXPECT_EQ(slurm.releases, 1);
  EXPECT_TRUE(r.busy().empty());
}

TEST_F(ReconfigurerTest, ARequeuedJobIsReleasedOnlyOnceItMayStart) {
  Reconfigurer r = fresh();
  r.start(change(Path::requeue), 0);
  slurm.jobs[7].phase = JobPhase::pending;
  slurm.jobs[7].eligible_time_s = 17;  // requeued at 6 with cred_expire=10: 6 + 10 + 1
  r.advance_all(6);
  EXPECT_EQ(step_of(1), Step::updated);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new");
  EXPECT_TRUE(slurm.jobs[7].held);
  r.advance_all(16.5);
  EXPECT_EQ(slurm.releases, 0);
  r.advance_all(17);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_EQ(slurm.releases, 1);
  // A begin time far ahead (the user's --begin) is not waited for.
  slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::pending, false, "morph:v1 old", {}};
  slurm.jobs[7].eligible_time_s = 20 + 86400;
  r.start(change(Path::requeue), 20);
  EXPECT_EQ(step_of(2), Step::done);
  EXPECT_FALSE(slurm.jobs[7].held);
}

// kill -9 morphd right after any Slurm action, before it could journal the step: a new
// morphd, reading the same journal, finishes the work. The job is never left held, never
// updated twice; at worst the checkpoint signal is sent twice (the trainer's flag is
// already set).
struct Crash {};

class CrashingSlurm : public FakeSlurm {
 public:
  int actions_left = 1 << 30;
  void act() {
    if (--actions_left < 0) throw Crash{};
  }
  std::string set_record(std::uint32_t id, const std::string& text, bool pending) override {
    const std::string r = FakeSlurm::set_record(id, text, pending);
    act();
    return r;
  }
  std::string signal_batch(std::uint32_t id, int s) override {
    const std::string r = FakeSlurm::signal_batch(id, s);
    jobs.at(id).phase = JobPhase::pending;  // the job saves, exits 75 and is requeued at once
    act();
    return r;
  }
  std::string hold(std::uint32_t id) override {
    const std::string r = FakeSlurm::hold(id);
    act();
    return r;
  }
  std::string release(std::uint32_t id) override {
    const std::string r = FakeSlurm::release(id);
    act();
    return r;
  }
};

TEST(ReconfigurerCrash, AMorphdKilledAfterAnySlurmActionIsSucceededWithoutLossOrRepeat) {
  for (int actions = 0; actions < 5; ++actions) {
    CrashingSlurm slurm;
    slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::running, false, "morph:v1 old", {"n1"}, -200, -100};
    slurm.actions_left = actions;
    MemoryJournal journal;
    try {
      Reconfigurer(slurm, journal, {}, nullptr).start(change(Path::requeue), 0);
      for (int round = 1; round < 4; ++round) Reconfigurer(slurm, journal, {}, nullptr).advance_all(round);
    } catch (const Crash&) {
    }
    slurm.actions_left = 1 << 30;
    Reconfigurer(slurm, journal, {}, nullptr).advance_all(10);  // the successor
    ASSERT_EQ(journal.entries().size(), 1u);
    EXPECT_EQ(journal.entries().begin()->second.step, Step::done) << actions;
    EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new") << actions;
    EXPECT_FALSE(slurm.jobs[7].held) << actions;
    EXPECT_EQ(slurm.updates, 1) << actions;
    EXPECT_LE(slurm.signals, 2) << actions;
    EXPECT_EQ(slurm.holds, 1) << actions;
    EXPECT_EQ(slurm.releases, 1) << actions;
  }
}

// A batch script that started a moment ago may not have its signal handler yet.
TEST_F(ReconfigurerTest, AJobThatHasJustStartedIsSignalledOnlyAMomentLater) {
  slurm.jobs[7].start_time_s = 98;
  Reconfigurer r = fresh();
  r.start(change(Path::requeue), 100);
  EXPECT_EQ(step_of(1), Step::planned);
  EXPECT_EQ(slurm.signals, 0);
  r.advance_all(103.5);
  EXPECT_EQ(step_of(1), Step::signalled);
  EXPECT_EQ(slurm.signals, 1);
}

// While morphd was down the signalled job saved, was requeued and started again: it runs
// its old plan, so the entry rolls back instead of signalling it once more.
TEST_F(ReconfigurerTest, AJobThatStartedAgainBeforeItWasHeldKeepsItsOldPlan) {
  slurm.jobs[7].start_time_s = 50;
  fresh().start(change(Path::requeue), 100);
  ASSERT_EQ(step_of(1), Step::signalled);
  fresh().advance_all(120);  // a successor: still saving
  EXPECT_EQ(step_of(1), Step::signalled);
  slurm.jobs[7].start_time_s = 130;
  fresh().advance_all(131);
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_EQ(slurm.signals, 1);
  EXPECT_EQ(slurm.holds, 0);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 old");
}

TEST_F(ReconfigurerTest, AJobThatDoesNotSaveInTimeIsRequeuedByForce) {
  Reconfigurer r = fresh();
  r.start(change(Path::requeue), 0);
  r.advance_all(60 + 30 - 1);
  EXPECT_EQ(slurm.forced, 0);
  r.advance_all(60 + 30 + 1);
  EXPECT_EQ(slurm.forced, 1);
  r.advance_all(92);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_FALSE(slurm.jobs[7].held);
}

// A preemption the job does not save for in time: requeued by force (which holds it),
// then back in the queue unheld, for the policy to start again.
TEST_F(ReconfigurerTest, AJobPreemptedByForceIsLeftInTheQueueNotHeld) {
  Reconfigurer r = fresh();
  r.start({7, Path::preempt, "morph:v1 old", "morph:v1 old", "test"}, 0);
  r.advance_all(60 + 30 + 1);
  ASSERT_EQ(slurm.forced, 1);
  r.advance_all(92);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_FALSE(slurm.jobs[7].held);
  EXPECT_EQ(slurm.jobs[7].phase, JobPhase::pending);
}

TEST_F(ReconfigurerTest, ChangesUnderItRollBackAndNeverLeaveAJobHeld) {
  Reconfigurer r = fresh();
  slurm.jobs[7].admin_comment = "morph:v1 by-an-admin";
  r.start(change(Path::inplace), 0);
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 by-an-admin");
  // The job ends while morphd holds it.
  slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::pending, false, "morph:v1 old", {}};
  r.start(change(Path::requeue), 0);  // already pending: requeued, held, updated, released
  EXPECT_EQ(step_of(2), Step::done);
  slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::running, false, "morph:v1 old", {"n1"}, -200, -100};
  r.start(change(Path::requeue), 1);
  slurm.jobs[7].phase = JobPhase::done;
  r.advance_all(2);
  EXPECT_EQ(step_of(3), Step::rolled_back);
  // slurmctld away: nothing moves, nothing is lost.
  slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::running, false, "morph:v1 old", {"n1"}, -200, -100};
  r.start(change(Path::requeue), 3);
  slurm.answering = false;
  r.advance_all(4);
  EXPECT_EQ(step_of(4), Step::signalled);
  slurm.answering = true;
  slurm.jobs[7].phase = JobPhase::pending;
  r.advance_all(5);
  EXPECT_EQ(step_of(4), Step::done);
  EXPECT_FALSE(slurm.jobs[7].held);
  // A job Slurm forgot.
  r.start(Reconfiguration{99, Path::inplace, "a", "b", ""}, 6);
  EXPECT_EQ(step_of(5), Step::rolled_back);
}

TEST_F(ReconfigurerTest, AHeldJobWhoseUpdateTimesOutIsUpdatedTheNextRound) {
  Reconfigurer r = fresh();
  slurm.jobs[7].phase = JobPhase::pending;  // saved, exited 75, requeued
  slurm.timing_out = {"update"};
  r.start(change(Path::requeue), 0);
  EXPECT_EQ(step_of(1), Step::held);
  EXPECT_TRUE(slurm.jobs[7].held);
  slurm.timing_out.clear();
  r.advance_all(60);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new");
  EXPECT_FALSE(slurm.jobs[7].held);
}

TEST_F(ReconfigurerTest, AJobIsNeverLeftHeldWhenItsReleaseTimesOut) {
  Reconfigurer r = fresh();
  slurm.jobs[7].phase = JobPhase::pending;
  slurm.timing_out = {"update", "release"};
  r.start(change(Path::requeue), 0);
  r.advance_all(200);  // the update is given up on; the release fails too: the entry stays
  EXPECT_EQ(step_of(1), Step::held);
  EXPECT_TRUE(slurm.jobs[7].held);
  EXPECT_EQ(r.busy(), std::set<std::uint32_t>{7});
  slurm.timing_out = {"update"};
  r.advance_all(260);  // released on its old plan, then rolled back
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_FALSE(slurm.jobs[7].held);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 old");
}

// The user holds the job once it is back in the queue (JobHeldUser): morphd neither holds
// it again nor releases it, whether its plan is carried out or rolled back.
TEST_F(ReconfigurerTest, AHoldByTheJobsUserOutlastsTheChange) {
  auto held_by_user = [this] {
    slurm.jobs[7].phase = JobPhase::pending;
    slurm.jobs[7].held = slurm.jobs[7].held_by_user = true;
  };
  Reconfigurer r = fresh();
  r.start(change(Path::requeue), 0);
  held_by_user();
  r.advance_all(6);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new");
  EXPECT_TRUE(slurm.jobs[7].held_by_user);
  EXPECT_EQ(slurm.holds, 0);
  EXPECT_EQ(slurm.releases, 0);
  // Its record changes under it while the update times out: rolled back, still held.
  slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::running, false, "morph:v1 old", {"n1"}, -200, -100};
  r.start(change(Path::requeue), 10);
  held_by_user();
  slurm.timing_out = {"update"};
  r.advance_all(16);
  EXPECT_EQ(step_of(2), Step::held);
  slurm.jobs[7].admin_comment = "morph:v1 by-an-admin";
  r.advance_all(17);
  EXPECT_EQ(step_of(2), Step::rolled_back);
  EXPECT_TRUE(slurm.jobs[7].held_by_user);
  EXPECT_EQ(slurm.releases, 0);
  // A job forced out for a preemption while its user holds it stays held too.
  slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::running, false, "morph:v1 old", {"n1"}, -200, -100};
  r.start(change(Path::preempt), 20);
  held_by_user();
  r.advance_all(26);
  EXPECT_EQ(step_of(3), Step::done);
  EXPECT_TRUE(slurm.jobs[7].held_by_user);
  EXPECT_EQ(slurm.releases, 0);
}

TEST_F(ReconfigurerTest, AHoldWhoseAnswerWasLostIsReadBackNotRolledBack) {
  Reconfigurer r = fresh();
  slurm.jobs[7].phase = JobPhase::pending;
  slurm.timing_out = {"hold"};
  slurm.lost = true;  // held, but morphd hears a timeout
  r.start(change(Path::requeue), 0);
  EXPECT_EQ(step_of(1), Step::requeued);
  EXPECT_TRUE(slurm.jobs[7].held);
  slurm.timing_out.clear();
  r.advance_all(60);
  EXPECT_EQ(step_of(1), Step::done);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 new");
  EXPECT_FALSE(slurm.jobs[7].held);
  EXPECT_EQ(slurm.holds, 1);
}

// Holds that fail until the entry gives up: it gives up before calling again, so a last
// hold that slurmctld makes but whose answer is lost cannot leave the job held with no
// entry to release it.
TEST_F(ReconfigurerTest, AHoldThatKeepsFailingGivesUpWithoutHoldingTheJob) {
  Reconfigurer r = fresh();
  slurm.jobs[7].phase = JobPhase::pending;
  slurm.timing_out = {"hold"};
  r.start(change(Path::requeue), 0);
  r.advance_all(100);
  EXPECT_EQ(step_of(1), Step::requeued);
  EXPECT_EQ(slurm.holds, 2);
  slurm.lost = true;  // a hold now would be made, its answer lost
  r.advance_all(181);
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_EQ(slurm.holds, 2);
  EXPECT_FALSE(slurm.jobs[7].held);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 old");
}

// A preempt keeps the job's record: a plan slurmctld could not begin in time is dropped,
// not carried out hours later on a changed cluster.
TEST_F(ReconfigurerTest, APreemptThatNeverBeganIsNotCarriedOutLater) {
  Reconfigurer r = fresh();
  Reconfiguration preempt = change(Path::preempt);
  preempt.to_record = preempt.from_record;
  slurm.answering = false;
  r.start(preempt, 0);
  slurm.answering = true;
  r.advance_all(7200);
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_EQ(slurm.signals, 0);
  EXPECT_EQ(slurm.jobs[7].phase, JobPhase::running);
}

// The job's user held it (morphd did not), the record update timed out, and the user
// released it: it runs its old plan, and gets no pending job's update.
TEST_F(ReconfigurerTest, AJobThatStartedAgainBeforeItsUpdateGetsNone) {
  Reconfigurer r = fresh();
  r.start(change(Path::requeue), 0);
  slurm.jobs[7].phase = JobPhase::pending;
  slurm.jobs[7].held = slurm.jobs[7].held_by_user = true;
  slurm.timing_out = {"update"};
  r.advance_all(6);
  EXPECT_EQ(step_of(1), Step::held);
  EXPECT_EQ(slurm.updates, 1);
  slurm.jobs[7].phase = JobPhase::running;
  slurm.jobs[7].held = slurm.jobs[7].held_by_user = false;
  slurm.timing_out.clear();
  r.advance_all(60);
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_EQ(slurm.updates, 1);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 old");
}

TEST_F(ReconfigurerTest, AForcedRequeueThatKeepsFailingGivesUpAndTheJobRunsOn) {
  Reconfigurer r = fresh();  // checkpoint timeout 60 s, grace 30 s
  slurm.timing_out = {"requeue"};
  r.start(change(Path::requeue), 0);
  r.advance_all(100);  // due at 90: fails, tried again
  EXPECT_EQ(step_of(1), Step::signalled);
  EXPECT_EQ(slurm.forced, 1);
  r.advance_all(269);
  EXPECT_EQ(step_of(1), Step::signalled);
  r.advance_all(271);  // 180 s after it became due
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_EQ(slurm.jobs[7].phase, JobPhase::running);
  EXPECT_EQ(slurm.jobs[7].admin_comment, "morph:v1 old");
  EXPECT_TRUE(r.busy().empty());
}

TEST_F(ReconfigurerTest, APlanThatNeverBeganIsNotCarriedOutLater) {
  Reconfigurer r = fresh();  // stale_plan_s 180
  slurm.answering = false;   // slurmctld away when the plan was made
  r.start(change(Path::requeue), 0);
  EXPECT_EQ(step_of(1), Step::planned);
  slurm.answering = true;
  r.advance_all(7200);
  EXPECT_EQ(step_of(1), Step::rolled_back);
  EXPECT_EQ(slurm.signals, 0);
  EXPECT_EQ(slurm.jobs[7].phase, JobPhase::running);
  // Within a few rounds it goes on.
  slurm.answering = false;
  r.start(change(Path::requeue), 7300);
  slurm.answering = true;
  r.advance_all(7360);
  EXPECT_EQ(step_of(2), Step::signalled);
  // A record morphd wrote before it could journal it is carried on, however late.
  slurm.jobs[7] = SlurmJob{7, 1000, JobPhase::running, false, "morph:v1 old", {"n1"}, -200, -100};
  slurm.answering = false;
  r.start(change(Path::inplace), 7400);
  slurm.answering = true;
  slurm.jobs[7].admin_comment = "morph:v1 new";
  r.advance_all(20000);
  EXPECT_EQ(step_of(3), Step::done);
}

TEST(Journal, StepsOnlyMoveForwardAlongThePath) {
  MemoryJournal j;
  const std::int64_t id = j.begin(change(Path::requeue), 0);
  j.advance(id, Step::signalled, 1);
  EXPECT_THROW(j.advance(id, Step::planned, 2), Error);
  j.advance(id, Step::rolled_back, 3);
  EXPECT_THROW(j.advance(id, Step::done, 4), Error);
  const std::int64_t other = j.begin(change(Path::inplace), 5);
  EXPECT_THROW(j.advance(other, Step::signalled, 6), Error);  // the inplace path takes no signal
}

}  // namespace
}  // namespace morph::daemon
