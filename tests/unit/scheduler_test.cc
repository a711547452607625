// One morphd round (daemon/scheduler.h) against a fake slurmctld: every decision is
// recorded with its alternatives, a waiting job only when its reason changes.
#include <gtest/gtest.h>

#include "daemon/scheduler.h"
#include "libmorph/record/job_record.h"
#include "tests/unit/test_support.h"

namespace morph::daemon {
namespace {

constexpr const char* kConf = R"(GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24
NodeType=emu-a100 Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25 Nics=2
NodeName=a100-1 NodeType=emu-a100
)";

// A slurmctld that has forgotten every job: a reconfiguration begun is rolled back.
class ForgetfulSlurm : public SlurmOps {
 public:
  std::optional<SlurmJob> job(std::uint32_t, bool* gone) override {
    *gone = true;
    return std::nullopt;
  }
  std::string set_record(std::uint32_t, const std::string&, bool) override { return {}; }
  std::string signal_batch(std::uint32_t, int) override { return {}; }
  std::string requeue_hold(std::uint32_t) override { return {}; }
  std::string hold(std::uint32_t) override { return {}; }
  std::string release(std::uint32_t) override { return {}; }
};

// A job of gpt2-1.5b, batch 16, on 1 x `gpus` a100.
std::string record(int gpus, Sla sla) {
  JobRecord r;
  r.request.model = "gpt2-1.5b";
  r.request.global_batch = 16;
  r.request.sla = sla;
  r.request.sla_given = true;
  r.current = {"a100-80g", 1, gpus, 4, test::make_plan(gpus, 1, 1, 1, 1, 16 / gpus), 100};
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
  EXPECT_EQ(start.action, "start");
  ASSERT_FALSE(start.alternatives.empty());
  EXPECT_EQ(start.alternatives[0].loss, policy::Loss::none);
}

}  // namespace
}  // namespace morph::daemon
