// How a job step's tasks get their plan (plugins/spank/helper/step_plan): one read of
// slurmctld per job start, bounded retries, and failures that never fail the launch.
#include "plugins/spank/helper/step_plan.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "libmorph/request/morph_request.h"

namespace morph::plugin {
namespace {

JobRecord one_gpu_record() {
  JobRecord r;
  set_morph_option(r.request, "model", "gpt2-1.5b");
  set_morph_option(r.request, "batch", "16");
  r.request.seq_len = 1024;
  r.current.gpu_type = "a100-80g";
  r.current.nodes = 1;
  r.current.gpus_per_node = 1;
  r.current.cpus_per_gpu = 4;
  r.current.plan.ga_steps = 4;
  r.current.plan.micro_batch_size = 4;
  r.current.iter_ms = 1434.0;
  return r;
}

// A slurmctld that fails `failures` times, then answers with `job`.
struct FakeController {
  JobView job;
  int failures = 0;
  int calls = 0;
  JobLoader loader() {
    return [this](std::string* error) -> std::optional<JobView> {
      ++calls;
      if (calls <= failures) {
        *error = "Socket timed out on send/recv operation";
        return std::nullopt;
      }
      return job;
    };
  }
};

struct Pauses {
  std::vector<long> ms;
  Sleeper sleeper() {
    return [this](std::chrono::milliseconds d) { ms.push_back(static_cast<long>(d.count())); };
  }
};

std::string value(const StepPlan& p, const std::string& name) {
  for (const auto& [n, v] : p.env)
    if (n == name) return v;
  return "<unset>";
}

class StepPlanTest : public ::testing::Test {
 protected:
  const std::string record = to_admin_comment(one_gpu_record());
  FakeController controller{{record, 1, "gres:gpu:a100-80g:1"}};
  Pauses pauses;
  StepContext batch{42, true, {{"SLURM_JOB_NUM_NODES", "1"}, {"SLURM_GPUS_ON_NODE", "1"}}};
};

TEST_F(StepPlanTest, TheBatchStepReadsSlurmctldOnceAndPassesThePlanOn) {
  const StepPlan p = step_plan(batch, controller.loader(), {}, pauses.sleeper());
  ASSERT_EQ(p.failure, PlanFailure::none) << p.message;
  EXPECT_EQ(controller.calls, 1);
  EXPECT_EQ(value(p, "MORPH_PLAN"), to_string(one_gpu_record().current.plan));
  EXPECT_EQ(value(p, "MORPH_RECORD"), record);
  EXPECT_EQ(value(p, "MORPH_RECORD_JOB"), "42");
  // A step of the same job inherits the record: no RPC at all.
  StepContext step{42, false, {{"MORPH_RECORD", record}, {"MORPH_RECORD_JOB", "42"}, {"SLURM_JOB_NUM_NODES", "1"}}};
  const StepPlan inherited = step_plan(step, controller.loader(), {}, pauses.sleeper());
  ASSERT_EQ(inherited.failure, PlanFailure::none) << inherited.message;
  EXPECT_EQ(controller.calls, 1);
  EXPECT_EQ(value(inherited, "MORPH_PLAN"), value(p, "MORPH_PLAN"));
  // Another job's record in the environment is not trusted.
  step.job_id = 43;
  EXPECT_EQ(step_plan(step, controller.loader(), {}, pauses.sleeper()).failure, PlanFailure::none);
  EXPECT_EQ(controller.calls, 2);
}

TEST_F(StepPlanTest, ASlowControllerIsRetriedWithGrowingPauses) {
  controller.failures = 3;
  const StepPlan p = step_plan(batch, controller.loader(), {4, std::chrono::milliseconds(1000)}, pauses.sleeper());
  ASSERT_EQ(p.failure, PlanFailure::none) << p.message;
  EXPECT_EQ(controller.calls, 4);
  EXPECT_EQ(pauses.ms, (std::vector<long>{1000, 2000, 4000}));
}

// Issue 10, defect 2: a stalled slurmctld made user_init fail, which drained the node and
// lost the job. Now the tries are bounded and the failure is one the task reports and
// exits 75 with, which RequeueExit=75 turns into a requeue.
TEST_F(StepPlanTest, AControllerThatNeverAnswersMeansRequeueNotAFailedLaunch) {
  controller.failures = 100;
  const StepPlan p = step_plan(batch, controller.loader(), {3, std::chrono::milliseconds(500)}, pauses.sleeper());
  EXPECT_EQ(p.failure, PlanFailure::retry);
  EXPECT_EQ(p.exit_code(), 75);
  EXPECT_EQ(controller.calls, 3);
  EXPECT_EQ(pauses.ms, (std::vector<long>{500, 1000}));
  EXPECT_NE(p.message.find("morph: job 42: slurmctld did not give the job's plan (3 tries"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("Socket timed out"), std::string::npos);
  EXPECT_EQ(p.message.find("RequeueExit"), std::string::npos);  // the caller says what follows
  EXPECT_TRUE(p.env.empty());
}

// srun blocks SIGINT while its plugins initialise: with slurmctld down, a Ctrl-C waited
// through every try (about 47 s by default). A pending signal ends the tries at once.
TEST_F(StepPlanTest, AnInterruptEndsTheTriesAtOnce) {
  controller.failures = 100;
  RetryPolicy retry{4, std::chrono::milliseconds(1000)};
  int asked = 0;
  retry.interrupted = [&] { return ++asked >= 2; };  // Ctrl-C during the first pause
  const StepPlan p = step_plan(batch, controller.loader(), retry, pauses.sleeper());
  EXPECT_EQ(p.failure, PlanFailure::retry);
  EXPECT_EQ(controller.calls, 2);
  EXPECT_EQ(pauses.ms, (std::vector<long>{1000}));
  EXPECT_NE(p.message.find("interrupted"), std::string::npos) << p.message;
}

TEST_F(StepPlanTest, NoRecordOrABadOneIsRefusedWithExit78) {
  controller.job.admin_comment = "";
  StepPlan p = step_plan(batch, controller.loader(), {}, pauses.sleeper());
  EXPECT_EQ(p.failure, PlanFailure::refuse);
  EXPECT_EQ(p.exit_code(), 78);
  EXPECT_NE(p.message.find("holds no Morph plan"), std::string::npos) << p.message;
  controller.job.admin_comment = "morph:v1 model=gpt2 batch=16";
  p = step_plan(batch, controller.loader(), {}, pauses.sleeper());
  EXPECT_EQ(p.failure, PlanFailure::refuse);
  EXPECT_NE(p.message.find("is not a valid plan"), std::string::npos) << p.message;
  // Issue 10, defect 1: a record with ga above the limit (what the planner once wrote).
  controller.job.admin_comment = record;
  controller.job.admin_comment.replace(controller.job.admin_comment.find(" ga=4 "), 6, " ga=1073741824 ");
  p = step_plan(batch, controller.loader(), {}, pauses.sleeper());
  EXPECT_EQ(p.failure, PlanFailure::refuse);
  EXPECT_EQ(controller.calls, 3);  // refusals are not retried
}

// Issue 10, defect 5: a job whose GPUs were changed without its plan ran the old plan.
TEST_F(StepPlanTest, APlanThatDoesNotMatchTheAllocationIsRefused) {
  controller.job.tres_per_node = "gres:gpu:a100-80g:8";
  StepPlan p = step_plan(batch, controller.loader(), {}, pauses.sleeper());
  EXPECT_EQ(p.failure, PlanFailure::refuse);
  EXPECT_NE(p.message.find("asks for 'gres:gpu:a100-80g:8' per node but its plan is for 1 node x 1 a100-80g"),
            std::string::npos)
      << p.message;
  controller.job.tres_per_node = "gres:gpu:v100-32g:1";
  EXPECT_EQ(step_plan(batch, controller.loader(), {}, pauses.sleeper()).failure, PlanFailure::refuse);
  controller.job.tres_per_node = "gres:gpu:a100-80g:1";
  controller.job.nodes = 2;
  EXPECT_EQ(step_plan(batch, controller.loader(), {}, pauses.sleeper()).failure, PlanFailure::refuse);
  controller.job.nodes = 1;
  batch.env["SLURM_GPUS_ON_NODE"] = "8";
  EXPECT_EQ(step_plan(batch, controller.loader(), {}, pauses.sleeper()).failure, PlanFailure::refuse);
  // A step that inherits the record checks the node count it runs on.
  StepContext step{42, false, {{"MORPH_RECORD", record}, {"MORPH_RECORD_JOB", "42"}, {"SLURM_JOB_NUM_NODES", "2"}}};
  p = step_plan(step, controller.loader(), {}, pauses.sleeper());
  EXPECT_EQ(p.failure, PlanFailure::refuse);
  EXPECT_NE(p.message.find("runs on 2 nodes"), std::string::npos) << p.message;
}

// A Morph job submitted from a heterogeneous or adaptive-batch Morph job's script (or one
// morphrun's driver restarts in place under a homogeneous plan) inherits that plan's
// MORPH_GPU_GROUPS and MORPH_ADAPTIVE_BATCH; its tasks saw them beside their own plan and
// the reference trainer split its batch per GPU type and adapted it.
TEST_F(StepPlanTest, ThePlanRemovesTheVariablesOfAnotherPlan) {
  StepPlan p = step_plan(batch, controller.loader(), {}, pauses.sleeper());
  ASSERT_EQ(p.failure, PlanFailure::none) << p.message;
  EXPECT_EQ(value(p, "MORPH_GA"), "4");
  EXPECT_EQ(p.unset, (std::vector<std::string>{"MORPH_GPU_GROUPS", "MORPH_ADAPTIVE_BATCH"}));
  JobRecord adaptive = one_gpu_record();
  set_morph_option(adaptive.request, "adaptive-batch", "8:64");
  controller.job.admin_comment = to_admin_comment(adaptive);
  p = step_plan(batch, controller.loader(), {}, pauses.sleeper());
  ASSERT_EQ(p.failure, PlanFailure::none) << p.message;
  EXPECT_EQ(value(p, "MORPH_ADAPTIVE_BATCH"), "8:64");
  EXPECT_EQ(p.unset, (std::vector<std::string>{"MORPH_GPU_GROUPS"}));
}

TEST(SrunDefaults, OneTaskPerGpuWithThePlansCpus) {
  JobRecord r = one_gpu_record();
  r.current.nodes = 2;
  r.current.gpus_per_node = 8;
  r.current.plan.dp = 16;
  const auto defaults = srun_defaults(r);
  ASSERT_EQ(defaults.size(), 3u);
  EXPECT_EQ(defaults[0], (std::pair<std::string, std::string>{"SLURM_NTASKS", "16"}));
  EXPECT_EQ(defaults[1], (std::pair<std::string, std::string>{"SLURM_NTASKS_PER_NODE", "8"}));
  EXPECT_EQ(defaults[2], (std::pair<std::string, std::string>{"SLURM_CPUS_PER_TASK", "4"}));
}

}  // namespace
}  // namespace morph::plugin
