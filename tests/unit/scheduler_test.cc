// One morphd round (daemon/scheduler.h) against a fake slurmctld: every decision is
// recorded with its alternatives, a waiting job only when its reason changes; what the
// jobs measured reaches the policy, a refitted model is what the round predicts with, and a
// guaranteed request spread over nodes is requeued onto the fewest when that pays back.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "daemon/reconfigurer.h"
#include "daemon/scheduler.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/record/job_record.h"
#include "tests/forgetful_slurm.h"
#include "tests/unit/daemon_support.h"
#include "tests/unit/test_support.h"

namespace morph::daemon {
namespace {

constexpr const char* kConf = R"(GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24
NodeType=emu-a100 Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25 Nics=2
NodeName=a100-1 NodeType=emu-a100
)";

using test::ForgetfulSlurm;

// A job of gpt2-1.5b, batch 16, on 1 x `gpus` a100.
std::string record(int gpus, Sla sla) {
  JobRecord r;
  r.request.model = "gpt2-1.5b";
  r.request.global_batch = 16;
  r.request.sla = sla;
  r.request.sla_given = true;
  r.current = {"a100-80g", 1, gpus, 4, test::make_plan(gpus, 1, 1, 1, 1, 16 / gpus), 100, {}};
  return to_admin_comment(r);
}

class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest()
      : config_(parse_morph_conf(kConf, "test.conf")),
        catalog_(Catalog::load_file(test::source_dir() + "/share/models.json")),
        reconfigurer_(slurm_, journal_, {}, nullptr),
        scheduler_({config_, catalog_, perf_}, policy::make_policy("morphling"), reconfigurer_, journal_) {}

  // Job 11 holds the node's 8 GPUs (guaranteed, on its request: it cannot shrink); job 12,
  // best-effort, waits.
  ClusterSnapshot snapshot(double now_s, bool first_running = true) const {
    ClusterSnapshot s;
    s.now_s = now_s;
    s.nodes = {{"a100-1", true, first_running ? 8 : 0}};
    SlurmJob running{11, 1000, first_running ? JobPhase::running : JobPhase::done, false, record(8, Sla::guaranteed), {"a100-1"},
                     100, 200, 0, 0};
    SlurmJob pending{12, 1000, JobPhase::pending, false, record(2, Sla::best_effort), {}, 400, 0, 0, 0};
    s.jobs = {running, pending};
    return s;
  }

  MorphConfig config_;
  Catalog catalog_;
  PerfStore perf_;
  ForgetfulSlurm slurm_;
  MemoryJournal journal_;
  Reconfigurer reconfigurer_;
  Scheduler scheduler_;
};

TEST_F(SchedulerTest, AWaitingJobIsRecordedOnceWithItsAlternatives) {
  scheduler_.round(snapshot(1000), true);
  EXPECT_TRUE(journal_.decisions().empty());  // a dry run records nothing
  scheduler_.round(snapshot(1000));
  scheduler_.round(snapshot(1060));
  ASSERT_EQ(journal_.decisions().size(), 1u);
  const DecisionNote& wait = journal_.decisions()[0];
  EXPECT_EQ(wait.job, 12u);
  EXPECT_EQ(wait.user_uid, 1000u);  // Slurm's, for a job the journal records first
  EXPECT_EQ(wait.action, "wait");
  EXPECT_EQ(wait.reason.rfind("wait: its best configuration, ", 0), 0u) << wait.reason;
  ASSERT_FALSE(wait.alternatives.empty());
  for (const policy::Alternative& a : wait.alternatives) EXPECT_NE(a.loss, policy::Loss::none);
  EXPECT_EQ(journal_.last_reason(12), wait.reason);

  // Job 11 ends: job 12 starts on more than its 2 GPUs, and the start lists its chosen
  // configuration first.
  scheduler_.round(snapshot(1120, false));
  ASSERT_EQ(journal_.decisions().size(), 2u);
  const DecisionNote& start = journal_.decisions()[1];
  EXPECT_EQ(start.job, 12u);
  EXPECT_EQ(start.user_uid, 1000u);
  EXPECT_EQ(start.action, "start");
  ASSERT_FALSE(start.alternatives.empty());
  EXPECT_EQ(start.alternatives[0].loss, policy::Loss::none);
}

// A pending job that cannot start (held, waiting for a dependency or its begin time) is
// planned no GPUs; released, it starts.
TEST_F(SchedulerTest, APendingJobThatCannotStartGetsNoGpus) {
  for (const char* blocked : {"held", "a dependency", "its begin time"}) {
    ClusterSnapshot s = snapshot(1120, false);
    s.jobs[1].blocked = blocked;
    const RoundReport held = scheduler_.round(s, true);
    EXPECT_EQ(held.jobs, 0) << blocked;
    EXPECT_EQ(held.started, 0) << blocked;
    EXPECT_NE(std::find(held.lines.begin(), held.lines.end(),
                        fmt::format("skipped job 12: pending on {}: no GPUs until it can start", blocked)),
              held.lines.end())
        << fmt::format("{}", fmt::join(held.lines, "\n"));
  }
  const RoundReport released = scheduler_.round(snapshot(1120, false), true);
  EXPECT_EQ(released.jobs, 1);
  EXPECT_EQ(released.started, 1);
}

// Right after slurmctld restarts, no node has registered again: the round places nothing
// and says so. It threw "the cluster has no nodes", and morphd exited in the middle of a
// requeue (morphd.bats, "slurmctld restarted in the middle of a reconfiguration").
TEST_F(SchedulerTest, ARoundWithoutAUsableNodeLeavesTheJobsAsTheyAre) {
  ClusterSnapshot s = snapshot(1000, false);  // job 12 waits; no job runs on the node
  s.nodes[0].usable = false;
  RoundReport r;
  ASSERT_NO_THROW(r = scheduler_.round(s));
  EXPECT_EQ(r.started, 0);
  EXPECT_NE(std::find(r.lines.begin(), r.lines.end(), "no node is usable by Morph: 1 job left as it is this round"),
            r.lines.end())
      << fmt::format("{}", fmt::join(r.lines, "\n"));
  EXPECT_EQ(scheduler_.round(snapshot(1060, false)).started, 1);  // the node back: job 12 starts
}

// morphd's SIGHUP: the round after reload() plans with the new morph.conf (here
// MaxGpusPerJob=2, where job 12 had started on the node's 8 GPUs before).
TEST_F(SchedulerTest, TheRoundAfterAReloadPlansWithTheNewConfiguration) {
  const auto gpus_started = [](const RoundReport& r) {
    for (const std::string& line : r.lines)
      if (const auto at = line.find("job 12: start: "); at != std::string::npos) {
        const auto to = line.find(" -> 1 node x ");
        return to == std::string::npos ? -1 : std::stoi(line.substr(to + 13));
      }
    return 0;
  };
  const RoundReport before = scheduler_.round(snapshot(1120, false), true);
  EXPECT_EQ(gpus_started(before), 8) << fmt::format("{}", fmt::join(before.lines, "\n"));
  const MorphConfig limited = parse_morph_conf(std::string(kConf) + "MaxGpusPerJob=2\n", "test.conf");
  scheduler_.reload({limited, catalog_, perf_});
  const RoundReport after = scheduler_.round(snapshot(1120, false), true);
  EXPECT_EQ(gpus_started(after), 2) << fmt::format("{}", fmt::join(after.lines, "\n"));
}

// A pending job that Slurm keeps waiting on a limit of its size (QOS MaxTRESPerJob on its
// GPUs, which morphd cannot read) is planned below that size, and stays below it once
// it runs. Before, it was given its 8 GPUs again every round and waited for ever.
TEST_F(SchedulerTest, AJobOverASizeLimitIsPlannedBelowIt) {
  const auto lines = [](const RoundReport& r) { return fmt::format("{}", fmt::join(r.lines, "\n")); };
  ClusterSnapshot s = snapshot(1120, false);
  s.jobs[1].admin_comment = record(8, Sla::best_effort);
  EXPECT_NE(lines(scheduler_.round(s, true)).find("-> 1 node x 8 a100-80g"), std::string::npos);
  s.jobs[1].size_limit = SizeLimit::gpus;
  const RoundReport capped = scheduler_.round(s, true);
  const std::string said = lines(capped);
  EXPECT_NE(said.find("job 12: waits on a limit of its GPUs (its QOS's or association's MaxTRESPerJob or -PerNode) "
                      "at 8 GPUs on 1 node: at most 7 GPUs from now on"),
            std::string::npos) << said;
  EXPECT_EQ(capped.started, 1) << said;
  EXPECT_NE(said.find("-> 1 node x 6 a100-80g"), std::string::npos) << said;
  // A restarted morphd takes the cap back from its state database (SizeCaps::rows).
  const std::vector<store::SizeCapRow> kept = scheduler_.size_caps().rows();
  EXPECT_EQ(kept, (std::vector<store::SizeCapRow>{{12, 7, 0, false}}));
  MemoryJournal journal;
  Reconfigurer reconfigurer(slurm_, journal, {}, nullptr);
  Scheduler restarted({config_, catalog_, perf_}, policy::make_policy("morphling"), reconfigurer, journal);
  restarted.size_caps().restore(kept);
  s.jobs[1].size_limit = SizeLimit::none;
  const std::string after_restart = lines(restarted.round(s, true));
  EXPECT_NE(after_restart.find("-> 1 node x 6 a100-80g"), std::string::npos) << after_restart;
  // Slurm no longer says why it waits (its record still at 8 GPUs): the cap holds, as it
  // does once the job runs, so that the job never grows back into the limit.
  s.jobs[1].size_limit = SizeLimit::none;
  const std::string later = lines(scheduler_.round(s, true));
  EXPECT_NE(later.find("-> 1 node x 6 a100-80g"), std::string::npos) << later;
  // A round whose view leaves the job out (its record unreadable) keeps the cap too.
  const std::string comment = s.jobs[1].admin_comment;
  s.jobs[1].admin_comment = "morph:v1 model=gpt2-1.5b";
  scheduler_.round(s, true);
  s.jobs[1].admin_comment = comment;
  EXPECT_NE(lines(scheduler_.round(s, true)).find("-> 1 node x 6 a100-80g"), std::string::npos);
  // Gone from Slurm, the job is forgotten: a new job under its id is not capped.
  const SlurmJob job = s.jobs.back();
  s.jobs.pop_back();
  scheduler_.round(s, true);
  s.jobs.push_back(job);
  EXPECT_NE(lines(scheduler_.round(s, true)).find("-> 1 node x 8 a100-80g"), std::string::npos);
  // Refused at its least size (--morph-gpus=8), it is not capped below it: said once.
  JobRecord least = parse_admin_comment(record(8, Sla::best_effort));
  least.request.gpus_min = 8;
  s.jobs.back().id = 15;
  s.jobs.back().admin_comment = to_admin_comment(least);
  s.jobs.back().size_limit = SizeLimit::gpus;
  const std::string stuck = lines(scheduler_.round(s, true));
  EXPECT_NE(stuck.find("job 15: waits on a limit of its GPUs at its least 8 GPUs: no smaller plan of it passes"),
            std::string::npos) << stuck;
  EXPECT_EQ(stuck.find("at most"), std::string::npos) << stuck;
  EXPECT_EQ(lines(scheduler_.round(s, true)).find("no smaller plan"), std::string::npos);
}

// The restart backoff reads what the journal has done to a job: a best-effort job on the
// whole node, restarted twice in place (Slurm counts no requeue), gives no GPUs to a
// waiting job until it has run two restart penalties since the last.
TEST_F(SchedulerTest, TheJournalsRestartsBackOffTheNextOne) {
  ClusterSnapshot s = snapshot(1000);
  s.jobs[0].admin_comment = record(8, Sla::best_effort);
  const auto shrunk = [&](double now_s) {
    s.now_s = now_s;
    MemoryJournal journal;
    for (int k = 0; k < 2; ++k) {  // both done at 900 s
      const std::int64_t id = journal.begin({11, Path::inplace, s.jobs[0].admin_comment, s.jobs[0].admin_comment, "t"}, 800);
      journal.advance(id, Step::updated, 900);
      journal.advance(id, Step::done, 900);
    }
    Reconfigurer reconfigurer(slurm_, journal, {}, nullptr);
    Scheduler scheduler({config_, catalog_, perf_}, policy::make_policy("morphling"), reconfigurer, journal);
    for (const std::string& line : scheduler.round(s, true).lines)
      if (line.rfind("job 11:", 0) == 0) return true;
    return false;
  };
  const double penalty = config_.policy.restart_penalty_s;
  ASSERT_GT(penalty, 0);
  EXPECT_FALSE(shrunk(900 + 1.5 * penalty));
  EXPECT_TRUE(shrunk(900 + 2.5 * penalty));
}

const ExecutionPlan kEight = test::make_plan(8, 1, 1, 1, 1, 2);
const ExecutionPlan kTwo = test::make_plan(2, 1, 1, 1, 1, 8);

// Takes every record morphd writes.
class RecordingSlurm : public SlurmOps {
 public:
  explicit RecordingSlurm(const ClusterSnapshot& s) {
    for (const SlurmJob& j : s.jobs) jobs[j.id] = j;
  }
  std::optional<SlurmJob> job(std::uint32_t id, bool* gone) override {
    *gone = !jobs.count(id);
    return *gone ? std::nullopt : std::optional(jobs.at(id));
  }
  std::string set_record(std::uint32_t id, const std::string& text, bool) override {
    jobs.at(id).admin_comment = text;
    return {};
  }
  std::string signal_batch(std::uint32_t, int) override { return {}; }
  std::string requeue_hold(std::uint32_t) override { return {}; }
  std::string hold(std::uint32_t) override { return {}; }
  std::string release(std::uint32_t) override { return {}; }

  std::map<std::uint32_t, SlurmJob> jobs;
};

class SchedulerMeasurementTest : public test::DaemonFixture {
 protected:
  // Job 11 runs on all of a100-1; job 12 waits for 2 GPUs.
  ClusterSnapshot cluster() const {
    return snapshot({test::running_job(11, "a100-1", kEight, 200), test::pending_job(12, kTwo)});
  }

  struct Round {
    RoundReport report;
    JobRecord started;  // job 12's new record
  };
  // One round of a fresh morphd, given `params` of gpt2-1.5b from the state database.
  Round run(const JobHistories& histories, const PerfModel* refit = nullptr) const {
    const ClusterSnapshot s = cluster();
    RecordingSlurm slurm(s);
    MemoryJournal journal;
    Reconfigurer reconfigurer(slurm, journal, {}, nullptr);
    Scheduler scheduler(context_, policy::make_policy("morphling"), reconfigurer, journal);
    if (refit != nullptr) scheduler.use_refit("gpt2-1.5b", *refit);
    Round r;
    r.report = scheduler.round(s, false, histories);
    r.started = parse_admin_comment(slurm.jobs.at(12).admin_comment);
    return r;
  }

  // What `params` predict, in ms, for `record`'s plan on its GPUs of a100-2.
  double predicted_ms(const JobRecord& record, const PerfParams& params) const {
    BuiltView built = build_view(cluster(), context_);
    built.apps.begin()->second.perf.params = params;
    policy::PlanOracle oracle(built.apps);
    const policy::JobState& pending = built.view.jobs.at(1);
    const Placement& p = record.current;
    EXPECT_EQ(p.nodes, 1);
    const std::vector<policy::Slice> slices{{1, p.gpus_per_node, p.gpus_per_node * p.cpus_per_gpu, 0}};
    return 1e3 * oracle.predict_s(pending, p.plan, built.view.nodes, slices);
  }

  // Job 11 reports twice the iteration time the model predicts for it.
  JobHistories slow_job_11() const {
    const BuiltView built = build_view(cluster(), context_);
    policy::PlanOracle oracle(built.apps);
    const policy::JobState& j = built.view.jobs.at(0);
    JobHistories h;
    test::report(h[11], 11, 300, kEight, 2 * oracle.predict_s(j, j.current.plan, built.view.nodes, j.current.slices),
                 5);
    return h;
  }
};

TEST_F(SchedulerMeasurementTest, ARefittedModelIsWhatTheRoundPredictsWith) {
  const Round plain = run({});
  EXPECT_TRUE(plain.report.refits.empty());
  ASSERT_EQ(plain.started.current.gpu_type, "a100-80g");
  const PerfParams defaults = build_view(cluster(), context_).apps.begin()->second.perf.params;
  EXPECT_NEAR(plain.started.current.iter_ms, predicted_ms(plain.started, defaults), 1e-3);

  const Round refitted = run(slow_job_11());
  ASSERT_EQ(refitted.report.refits.size(), 1u);
  const policy::ModelRefit& r = refitted.report.refits[0];
  EXPECT_EQ(r.model, "gpt2-1.5b");
  bool logged = false;
  for (const std::string& line : refitted.report.lines)
    logged |= line.rfind("refit gpt2-1.5b: error 50.0% -> ", 0) == 0;
  EXPECT_TRUE(logged);
  // Job 12 starts with the refitted model's prediction, slower than the plain one's.
  ASSERT_EQ(refitted.started.current.gpu_type, "a100-80g");
  const double by_refit = predicted_ms(refitted.started, r.perf.params);
  EXPECT_NEAR(refitted.started.current.iter_ms, by_refit, 1e-3);
  EXPECT_GT(by_refit, predicted_ms(refitted.started, defaults) * 1.02);

  // A morphd that starts with the stored parameters (and knows nothing measured) uses them.
  const Round restarted = run({}, &r.perf);
  EXPECT_TRUE(restarted.report.refits.empty());
  EXPECT_NEAR(restarted.started.current.iter_ms, predicted_ms(restarted.started, r.perf.params), 1e-3);
}

// A guaranteed job that asked for 8 GPUs under kEight and runs kPipelined there, as
// Morph replanned it at 150; its history: `on_request` s per iteration before, `replanned` after.
TEST_F(SchedulerMeasurementTest, AGuaranteedJobsMeasurementsDecideWhetherItGoesBackToItsRequest) {
  const ExecutionPlan kPipelined = test::make_plan(4, 1, 2, 1, 2, 2);
  JobRecord record = parse_admin_comment(test::gpt2_record(kEight, Sla::guaranteed));
  record.baseline = record.current;
  record.current.plan = kPipelined;
  SlurmJob job11 = test::running_job(11, "a100-1", kPipelined, 100);
  job11.admin_comment = to_admin_comment(record);
  const ClusterSnapshot s = snapshot({job11});
  auto history = [&](double on_request, double replanned) {
    JobHistories h;
    h[11].plans.push_back({11, 150, job11.admin_comment, "a100-80g", 1, 8, 0, std::nullopt});
    test::report(h[11], 11, 100, kEight, on_request, 5);
    test::report(h[11], 11, 160, kPipelined, replanned, 5);
    return h;
  };
  MorphConfig quiet = config_;
  quiet.policy.refit_error_threshold = 0;  // the measurements alone
  const ViewContext context{quiet, catalog_, perf_};
  // The plan job 11 runs after one round with `histories`.
  auto after_round = [&](const JobHistories& histories) {
    RecordingSlurm slurm(s);
    MemoryJournal journal;
    Reconfigurer reconfigurer(slurm, journal, {}, nullptr);
    Scheduler scheduler(context, policy::make_policy("morphling"), reconfigurer, journal);
    scheduler.round(s, false, histories);
    return parse_admin_comment(slurm.jobs.at(11).admin_comment).current.plan;
  };
  // Nothing measured on its request: no promise, so the job runs its request.
  EXPECT_EQ(after_round({}), kEight);
  // Measured faster than its promise: Morph's plan stays.
  EXPECT_EQ(after_round(history(0.010, 0.005)), kPipelined);
  // Measured slower than its promise: back to its request.
  EXPECT_EQ(after_round(history(0.010, 0.020)), kEight);
}

// A guaranteed job that asked for 4 GPUs of one node runs that request on 2 + 2 GPUs of
// a100-1 and a100-2, where morphd started it when no node had 4 free (at 150), 1 s an
// iteration. Both nodes have 6 GPUs free now: one round requeues it onto one node, its
// plan unchanged, when the time gained over its declared length pays for the restart;
// with 10 iterations declared it stays spread.
TEST_F(SchedulerMeasurementTest, ARequestSpreadOverNodesMovesOntoOneWhenThatPaysBack) {
  const ExecutionPlan kFour = test::make_plan(4, 1, 1, 1, 1, 4);
  JobRecord record = parse_admin_comment(test::gpt2_record(kFour, Sla::guaranteed));
  record.baseline = record.current;
  record.current.nodes = 2;
  record.current.gpus_per_node = 2;
  MorphConfig quiet = config_;
  quiet.policy.refit_error_threshold = 0;  // the measurements alone
  const ViewContext context{quiet, catalog_, perf_};
  // What one round starts for job 11 when it declares `iterations`.
  auto changes = [&](std::int64_t iterations) {
    record.request.iterations = iterations;
    const SlurmJob job11{11, 1000, JobPhase::running, false, to_admin_comment(record), {"a100-1", "a100-2"}, 100, 150, 0, 0};
    ClusterSnapshot s;
    s.now_s = 1000;
    s.nodes = {{"a100-1", true, 2}, {"a100-2", true, 2}, {"v100-1", true, 0}};
    s.jobs = {job11};
    JobHistories h;
    h[11].plans.push_back({11, 150, job11.admin_comment, "a100-80g", 2, 2, 0, std::nullopt});
    test::report(h[11], 11, 300, kFour, 1.0, 5);
    RecordingSlurm slurm(s);
    MemoryJournal journal;
    Reconfigurer reconfigurer(slurm, journal, {}, nullptr);
    Scheduler scheduler(context, policy::make_policy("morphling"), reconfigurer, journal);
    scheduler.round(s, false, h);
    std::vector<Reconfiguration> started;
    for (const auto& [id, e] : journal.entries()) started.push_back(e.change);
    return started;
  };
  const std::vector<Reconfiguration> packed = changes(100000);
  ASSERT_EQ(packed.size(), 1u);
  EXPECT_EQ(packed[0].job, 11u);
  EXPECT_EQ(packed[0].path, Path::requeue);
  const Placement to = parse_admin_comment(packed[0].to_record).current;
  EXPECT_EQ(to.nodes, 1);
  EXPECT_EQ(to.gpus_per_node, 4);
  EXPECT_EQ(to.plan, kFour);
  EXPECT_TRUE(changes(10).empty());
}

}  // namespace
}  // namespace morph::daemon
