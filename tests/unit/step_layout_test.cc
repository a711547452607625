// Where morphrun's ranks sit (libmorph/launch/step_layout.h), their environment
// (rank_env.h) and the plan they run under (plan_source.h).
#include <gtest/gtest.h>

#include <set>

#include "libmorph/launch/plan_source.h"
#include "libmorph/launch/rank_env.h"
#include "libmorph/launch/step_layout.h"
#include "libmorph/record/job_record.h"
#include "libmorph/util/error.h"
#include "tests/unit/test_support.h"

namespace morph {
namespace {

using launch::Environment;

// What srun gives task `rank` of a 2-node step with 2 tasks per node.
Environment srun_task(int rank) {
  return {{"SLURM_JOB_ID", "42"},           {"SLURM_STEP_ID", "3"},
          {"SLURM_STEP_NODELIST", "a100-[1-2]"}, {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_JOB_NUM_NODES", "2"},     {"SLURM_NODEID", std::to_string(rank / 2)},
          {"SLURM_PROCID", std::to_string(rank)}, {"SLURM_LOCALID", std::to_string(rank % 2)},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}, {"SLURM_GPUS_ON_NODE", "2"},
          {"CUDA_VISIBLE_DEVICES", "4,5"}};
}

std::string value(const std::vector<std::pair<std::string, std::string>>& env, const std::string& name) {
  for (const auto& [k, v] : env)
    if (k == name) return v;
  return "<unset>";
}

TEST(StepLayout, EveryTaskOfASrunStepGetsAConsistentRankEnvironment) {
  const ExecutionPlan plan = test::make_plan(2, 2);
  std::set<int> ranks;
  std::set<std::string> node_gpus[2];
  for (int task = 0; task < 4; ++task) {
    const launch::StepLayout step = launch::slurm_step_layout(srun_task(task), false, plan.gpus());
    ASSERT_EQ(step.ranks.size(), 1u);
    const int rank = step.ranks.front();
    ranks.insert(rank);
    const auto env =
        launch::rank_environment(plan, step, rank, {"10.0.0.1", launch::master_port(42, 3, {}), 8, {16, 2, 3}});
    EXPECT_EQ(value(env, "RANK"), std::to_string(task));
    EXPECT_EQ(value(env, "LOCAL_RANK"), std::to_string(task % 2));
    EXPECT_EQ(value(env, "WORLD_SIZE"), "4");
    EXPECT_EQ(value(env, "LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(value(env, "GROUP_RANK"), std::to_string(task / 2));
    EXPECT_EQ(value(env, "MASTER_ADDR"), "10.0.0.1");
    EXPECT_EQ(value(env, "MASTER_PORT"), std::to_string(20000 + 42 * 8 + 3));
    EXPECT_EQ(value(env, "OMP_NUM_THREADS"), "8");
    EXPECT_EQ(value(env, "MORPH_TP_RANK"), std::to_string(task % 2));  // TP innermost
    EXPECT_EQ(value(env, "MORPH_DP_RANK"), std::to_string(task / 2));
    EXPECT_EQ(value(env, "MORPH_LOCAL_BATCH"), "16");
    EXPECT_EQ(value(env, "MORPH_WORKERS"), "2");
    EXPECT_EQ(value(env, "MORPH_GA"), "3");
    node_gpus[task / 2].insert(value(env, "CUDA_VISIBLE_DEVICES"));
    EXPECT_NO_THROW(launch::check_plan_fits(plan, nullptr, step));
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  for (const auto& gpus : node_gpus) EXPECT_EQ(gpus, (std::set<std::string>{"4", "5"}));
}

TEST(StepLayout, PerNodeStartsTheNodesRanksAndNeedsOneTaskPerNode) {
  Environment env = srun_task(2);
  env["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  env["SLURM_PROCID"] = "1";
  env["SLURM_LOCALID"] = "0";
  const launch::StepLayout step = launch::slurm_step_layout(env, true, 8);
  EXPECT_EQ(step.ranks, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(step.local_rank(6), 2);
  EXPECT_THROW(launch::slurm_step_layout(srun_task(0), true, 4), Error);  // 2 tasks per node
}

// PMIx gives a task one MPI rank: the trainers of a --per-node task cannot each be one.
TEST(StepLayout, AnMpiTrainerNeedsOneTaskPerRankSoPerNodeWithSeveralRanksIsRefused) {
  Environment env = srun_task(2);
  env["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  env["SLURM_PROCID"] = "1";
  env["SLURM_LOCALID"] = "0";
  try {
    launch::check_mpi_trainer_tasks(launch::slurm_step_layout(env, true, 8));
    FAIL() << "a --per-node task of 4 ranks was accepted with --mpi-trainer";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const char* part : {"--per-node", "--mpi-trainer", "4 trainer ranks", "--ntasks-per-node=4"})
      EXPECT_NE(what.find(part), std::string::npos) << part << " in " << what;
  }
  EXPECT_NO_THROW(launch::check_mpi_trainer_tasks(launch::slurm_step_layout(env, true, 2)));  // one rank per node
  EXPECT_NO_THROW(launch::check_mpi_trainer_tasks(launch::slurm_step_layout(srun_task(3), false, 4)));
}

TEST(StepLayout, RefusesCyclicDistributionAndBadVariablesNamingThem) {
  Environment env = srun_task(1);
  env["SLURM_PROCID"] = "2";  // task 1 of node 0 holding rank 2: cyclic
  try {
    launch::slurm_step_layout(env, false, 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block distribution"), std::string::npos) << e.what();
  }
  env = srun_task(0);
  env.erase("SLURM_STEP_NODELIST");
  EXPECT_THROW(launch::slurm_step_layout(env, false, 4), Error);
  env = srun_task(0);
  env["SLURM_STEP_TASKS_PER_NODE"] = "2,1";
  EXPECT_THROW(launch::slurm_step_layout(env, false, 4), Error);
}

TEST(StepLayout, APlanThatDoesNotUseTheAllocationIsRefusedNamingBoth) {
  const launch::StepLayout step = launch::slurm_step_layout(srun_task(0), false, 4);
  try {
    launch::check_plan_fits(test::make_plan(8), nullptr, step);
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("dp=8"), std::string::npos) << m;
    EXPECT_NE(m.find("4 ranks (2 nodes x 2)"), std::string::npos) << m;
  }
  Placement placement;
  placement.gpu_type = "a100-80g";
  placement.nodes = 1;
  placement.gpus_per_node = 4;
  placement.plan = test::make_plan(4);
  try {
    launch::check_plan_fits(placement.plan, &placement, step);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the job holds 2 nodes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(launch::check_plan_fits(test::make_plan(1, 4), nullptr, step), Error);  // tp 4 > 2 per node
}

TEST(StepLayout, OutsideSlurmAHostListPlacesTheRanks) {
  const launch::StepLayout step = launch::host_step_layout({"n1", "n2"}, 1, 4);
  EXPECT_EQ(step.ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(launch::rank_gpu(step, 1), "1");  // no GPUs listed: the local index
  EXPECT_THROW(launch::host_step_layout({"n1", "n2"}, 2, 4), Error);
  EXPECT_THROW(launch::host_step_layout({"n1", "n2"}, 0, 3), Error);
}

TEST(MasterPort, DiffersBetweenJobsAndConcurrentStepsAndStaysInRange) {
  const launch::PortRange fallback;  // 20000-32767: 1,596 jobs of 8 steps
  std::set<int> ports;
  for (std::uint32_t job = 1000; job < 2596; ++job)
    for (std::uint32_t step = 0; step < 8; ++step) ports.insert(launch::master_port(job, step, fallback));
  EXPECT_EQ(ports.size(), 1596u * 8);
  EXPECT_EQ(launch::master_port(7, 0xfffffffbu, fallback), launch::master_port(7, 0, fallback));  // the batch step
  for (const launch::PortRange range : {fallback, launch::PortRange{29500, 29507}, launch::PortRange{60000, 65535}})
    for (std::uint32_t job : {1u, 1595u, 1596u, 0x7fffffffu, 0xffffffffu})
      for (std::uint32_t step : {0u, 7u, 8u, 0xfffffffdu}) {
        EXPECT_GE(launch::master_port(job, step, range), range.low);
        EXPECT_LE(launch::master_port(job, step, range), range.high);
      }
  // A range that is not a multiple of 8 leaves its last ports unused rather than overflowing.
  EXPECT_EQ(launch::master_port(1, 7, {29500, 29514}), 29507);
}

TEST(PlanSource, TheRecordIsTheAuthorityAndPlanServesOutsideAMorphJob) {
  EXPECT_THROW(launch::resolve_plan({}, ""), Error);  // missing plan
  const launch::PlanSource given = launch::resolve_plan({}, "dp=2,tp=2,zero=1");
  EXPECT_EQ(given.plan.gpus(), 4);
  EXPECT_EQ(given.plan.zero_stage, 1);
  EXPECT_FALSE(given.record);
  JobRecord r;
  r.request.model = "gpt2-1.5b";
  r.request.global_batch = 8;
  r.current.gpu_type = "a100-80g";
  r.current.nodes = 1;
  r.current.gpus_per_node = 4;
  r.current.cpus_per_gpu = 4;
  r.current.plan = test::make_plan(4, 1, 1, 1, 1, 2);
  const Environment env{{"MORPH_RECORD", to_admin_comment(r)}};
  const launch::PlanSource recorded = launch::resolve_plan(env, "");
  ASSERT_TRUE(recorded.record);
  EXPECT_EQ(recorded.plan, r.current.plan);
  EXPECT_NO_THROW(launch::resolve_plan(env, "dp=4"));
  EXPECT_THROW(launch::resolve_plan(env, "dp=2,tp=2"), Error);  // disagrees with the record
  EXPECT_THROW(launch::resolve_plan({{"MORPH_RECORD", "morph:v1 model=x"}}, ""), Error);
  // A plain job submitted from a Morph job's script inherits that job's record (it ran
  // under the surrounding job's plan): not its own.
  Environment nested = env;
  nested["MORPH_RECORD_JOB"] = "41";
  nested["SLURM_JOB_ID"] = "41";
  EXPECT_TRUE(launch::resolve_plan(nested, "").record);
  nested["SLURM_JOB_ID"] = "42";
  EXPECT_THROW(launch::resolve_plan(nested, ""), Error);  // missing plan
  EXPECT_FALSE(launch::resolve_plan(nested, "dp=2,tp=2").record);
  EXPECT_THROW(launch::resolve_plan({{"MORPH_PLAN_ERROR", "morph: job 3: no plan"}}, "dp=1"), Error);
  EXPECT_THROW(launch::parse_plan_option("dp=2,color=blue"), Error);
  EXPECT_THROW(launch::parse_plan_option("dp=0"), Error);
  EXPECT_THROW(launch::parse_plan_option("dp"), Error);
}

}  // namespace
}  // namespace morph
