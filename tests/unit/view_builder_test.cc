// morphd's view of the cluster (daemon/view_builder.h) and what the policy's decisions
// mean for Slurm (daemon/reconfiguration.h).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "daemon/reconfiguration.h"
#include "daemon/view_builder.h"
#include "libmorph/policy/free_cells.h"
#include "libmorph/policy/policy.h"
#include "libmorph/util/error.h"
#include "tests/unit/daemon_support.h"

namespace morph::daemon {
namespace {

class DaemonView : public ::testing::Test {
 protected:
  DaemonView()
      : config_(parse_morph_conf(test::kDaemonConf, "test.conf")),
        catalog_(Catalog::load_file(test::source_dir() + "/share/models.json")),
        context_{config_, catalog_, perf_} {}

  // A Morph job of gpt2-1.5b, batch 16, on `nodes` x `gpn` GPUs of `type`.
  static std::string record(const std::string& type, int nodes, int gpn, const ExecutionPlan& plan) {
    JobRecord r;
    r.request.model = "gpt2-1.5b";
    r.request.global_batch = 16;
    r.current.gpu_type = type;
    r.current.nodes = nodes;
    r.current.gpus_per_node = gpn;
    r.current.cpus_per_gpu = 4;
    r.current.plan = plan;
    r.current.iter_ms = 100;
    return to_admin_comment(r);
  }

  ClusterSnapshot snapshot() const {
    ClusterSnapshot s;
    s.now_s = 1000;
    s.nodes = {{"a100-1", true, 8}, {"a100-2", true, 3}, {"v100-1", true, 0}, {"login", true, 0}};
    SlurmJob running{11, 1000, JobPhase::running, false, record("a100-80g", 1, 8, test::make_plan(8, 1, 1, 1, 1, 2)),
                     {"a100-1"}, 100, 200, 0, 0};
    SlurmJob pending{12, 1001, JobPhase::pending, false, record("a100-80g", 1, 2, test::make_plan(2, 1, 1, 1, 1, 8)),
                     {}, 400, 0, 0, 0};
    SlurmJob other{13, 1002, JobPhase::running, false, "", {"a100-2"}, 100, 200, 0, 0};  // not Morph: 3 GPUs
    SlurmJob broken{14, 1003, JobPhase::pending, false, "morph:v1 model=gpt2-1.5b", {}, 400, 0, 0, 0};
    s.jobs = {running, pending, other, broken};
    return s;
  }

  // snapshot() with job `id`'s AdminComment replaced.
  ClusterSnapshot with_comment(std::uint32_t id, const std::string& admin_comment) const {
    ClusterSnapshot s = snapshot();
    for (SlurmJob& j : s.jobs)
      if (j.id == id) j.admin_comment = admin_comment;
    return s;
  }
  // snapshot() with job `id`'s record changed by `edit`.
  template <class Edit>
  ClusterSnapshot with_record(std::uint32_t id, Edit edit) const {
    for (const SlurmJob& j : snapshot().jobs)
      if (j.id == id) {
        JobRecord r = parse_admin_comment(j.admin_comment);
        edit(r);
        return with_comment(id, to_admin_comment(r));
      }
    return snapshot();
  }

  MorphConfig config_;
  Catalog catalog_;
  PerfStore perf_;
  ViewContext context_;
};

// A guaranteed job is promised its request on the nodes its user asked for
// (policy::on_requested_nodes): the baseline's node count; without one, the fewest.
TEST_F(DaemonView, TheRequestsNodesComeFromItsBaseline) {
  JobRecord r = parse_admin_comment(record("a100-80g", 2, 1, test::make_plan(2, 1, 1, 1, 1, 8)));
  r.request.sla = Sla::guaranteed;
  r.request.sla_given = true;
  r.baseline = r.current;
  const BuiltView b = build_view(with_comment(12, to_admin_comment(r)), context_, {});
  ASSERT_EQ(b.view.jobs.size(), 2u);
  EXPECT_EQ(b.view.jobs[0].requested_nodes, 0);  // job 11: no baseline
  EXPECT_EQ(b.view.jobs[1].sla, Sla::guaranteed);
  EXPECT_EQ(b.view.jobs[1].requested_nodes, 2);
}

// The anti-starvation count is JobTracker's (job_histories.h), for running jobs too: an
// overdue job stays overdue once it runs, and a requeued one keeps what it waited before.
TEST_F(DaemonView, WaitingTimeComesFromTheTrackersCount) {
  JobHistories histories;
  histories[11].waited_s = 30000;  // running, past the default 8 h limit
  histories[12].waited_s = 42;     // pending: not Slurm's 600 s since its (re)submission
  const BuiltView b = build_view(snapshot(), context_, histories);
  ASSERT_EQ(b.view.jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(b.view.jobs[0].waited_s, 30000);
  EXPECT_DOUBLE_EQ(b.view.jobs[1].waited_s, 42);
  ASSERT_GT(b.view.starvation_limit_s, 0);
  EXPECT_TRUE(policy::overdue(b.view.jobs[0], b.view));
  EXPECT_FALSE(policy::overdue(b.view.jobs[1], b.view));
  // Without a count: a pending job has waited since its submission, a running one not at all.
  const BuiltView none = build_view(snapshot(), context_);
  EXPECT_DOUBLE_EQ(none.view.jobs[0].waited_s, 0);
  EXPECT_DOUBLE_EQ(none.view.jobs[1].waited_s, 600);
}

TEST_F(DaemonView, MorphJobsComeFromTheirRecordsAndOtherJobsOnlyTakeCapacity) {
  const BuiltView b = build_view(snapshot(), context_);
  ASSERT_EQ(b.view.nodes.size(), 3u);  // "login" is not a NodeName of morph.conf
  EXPECT_EQ(b.view.nodes[0].type.gpus, 8);  // all held by job 11
  EXPECT_EQ(b.view.nodes[1].type.gpus, 5);  // 3 taken by job 13
  EXPECT_EQ(b.view.nodes[2].type.gpus, 4);
  ASSERT_EQ(b.view.jobs.size(), 2u);
  const policy::JobState& running = b.view.jobs[0];
  EXPECT_EQ(running.id, "11");
  ASSERT_EQ(running.current.slices.size(), 1u);
  EXPECT_EQ(running.current.slices[0].node, 0);
  EXPECT_EQ(running.current.slices[0].gpus, 8);
  EXPECT_EQ(running.current.plan.dp, 8);
  const policy::JobState& pending = b.view.jobs[1];
  EXPECT_TRUE(pending.current.empty());
  EXPECT_DOUBLE_EQ(pending.waited_s, 600);
  EXPECT_EQ(pending.requested_plan.gpus(), 2);
  EXPECT_EQ(b.apps.size(), 1u);  // one model, batch and sequence: one application
  // Megatron-LM, the records' framework: its plans and its training state.
  const policy::AppProfile& app = b.apps.begin()->second;
  EXPECT_EQ(app.states, StateLayout::megatron);
  EXPECT_EQ(app.features & (kFeatureShardedZero | kFeatureOffload), 0u);
  const BuiltView d =
      build_view(with_record(11, [](JobRecord& r) { r.request.framework = Framework::deepspeed; }), context_);
  EXPECT_EQ(d.apps.at(d.view.jobs[0].app).states, StateLayout::deepspeed);
  EXPECT_EQ(d.apps.at(d.view.jobs[0].app).features & kFeatureShardedZero, kFeatureShardedZero);
  EXPECT_EQ(d.apps.size(), 2u) << "the pending job's Megatron and job 11's DeepSpeed are different applications";
  EXPECT_EQ(b.jobs.count("13"), 0u);
  bool said_broken = false, said_login = false;
  for (const std::string& s : b.skipped) {
    said_broken |= s.find("job 14") != std::string::npos;
    said_login |= s.find("node login") != std::string::npos;
  }
  EXPECT_TRUE(said_broken && said_login);
}

// A shrink rewrites the record at once; Slurm shows the job on its old nodes until
// morphrun's driver resizes it. Left out of the view meanwhile, its GPUs stay taken.
TEST_F(DaemonView, ARunningJobLeftOutOfTheViewKeepsItsGpusTaken) {
  ClusterSnapshot s = snapshot();
  s.nodes = {{"a100-1", true, 8}, {"a100-2", true, 8}, {"v100-1", true, 0}};
  s.jobs = {SlurmJob{11, 1000, JobPhase::running, false, record("a100-80g", 1, 8, test::make_plan(8, 1, 1, 1, 1, 2)),
                     {"a100-1", "a100-2"}, 100, 200, 0, 0}};
  const BuiltView b = build_view(s, context_);
  EXPECT_TRUE(b.view.jobs.empty());
  ASSERT_EQ(b.view.nodes.size(), 1u) << "no A100 GPU is free: job 11 holds all 16 until it is resized";
  EXPECT_EQ(b.view.nodes[0].name, "v100-1");
  const std::string said = fmt::format("{}", fmt::join(b.skipped, "\n"));
  EXPECT_NE(said.find("job 11: runs on 2 nodes that do not all match its record"), std::string::npos) << said;
  EXPECT_NE(said.find("job 11: its GPUs count as taken while it is left out"), std::string::npos) << said;
  // Once resized it is the policy's again, on its one node.
  s.jobs[0].nodes = {"a100-1"};
  s.nodes[1].gpus_in_use = 0;
  const BuiltView resized = build_view(s, context_);
  ASSERT_EQ(resized.view.jobs.size(), 1u);
  EXPECT_EQ(resized.view.nodes.size(), 3u);
}

// morphd signals only a job whose batch step is morphrun --driver (SlurmJob::driver: it
// started a step of its name); until then a running Morph job is left where it runs.
TEST_F(DaemonView, ARunningJobWithoutItsDriverIsLeftWhereItRuns) {
  ClusterSnapshot s = snapshot();
  s.nodes = {{"a100-1", true, 8}, {"a100-2", true, 0}, {"v100-1", true, 0}};
  s.jobs = {SlurmJob{11, 1000, JobPhase::running, false, record("a100-80g", 1, 8, test::make_plan(8, 1, 1, 1, 1, 2)),
                     {"a100-1"}, 100, 200, 0, 0}};
  s.jobs[0].driver = false;
  const BuiltView b = build_view(s, context_);
  EXPECT_TRUE(b.view.jobs.empty());
  ASSERT_EQ(b.view.nodes.size(), 2u) << "its node's 8 GPUs stay taken";
  EXPECT_EQ(b.view.nodes[0].name, "a100-2");
  const std::string said = fmt::format("{}", fmt::join(b.skipped, "\n"));
  EXPECT_NE(said.find("job 11: shows no step of morphrun --driver (yet): left where it runs"), std::string::npos)
      << said;
  s.jobs[0].driver = true;
  const BuiltView driven = build_view(s, context_);
  ASSERT_EQ(driven.view.jobs.size(), 1u);
  EXPECT_EQ(driven.view.nodes.size(), 3u);
  // A pending job has no driver yet and is planned all the same.
  s.jobs[0].phase = JobPhase::pending;
  s.jobs[0].nodes.clear();
  s.jobs[0].driver = false;
  EXPECT_EQ(build_view(s, context_).view.jobs.size(), 1u);
}

// slurmctld gives a job's GPUs back when it ends, before its epilog finishes
// (deallocate_nodes calls select_g_job_fini): gres_used leaves out a completing job,
// which the view still counts on its nodes. Another user's GPUs on the node stay taken.
TEST_F(DaemonView, ACompletingJobsGpusDoNotHideAnotherJobsOnItsNode) {
  ClusterSnapshot s = snapshot();
  s.nodes = {{"a100-1", true, 4}, {"a100-2", true, 0}, {"v100-1", true, 0}};  // 4: job 13's only
  s.jobs = {SlurmJob{11, 1000, JobPhase::finishing, false, record("a100-80g", 1, 4, test::make_plan(4, 1, 1, 1, 1, 4)),
                     {"a100-1"}, 100, 200, 0, 0},
            SlurmJob{13, 1002, JobPhase::running, false, "", {"a100-1"}, 100, 200, 0, 0}};  // not Morph: 4 GPUs
  const BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.nodes.size(), 3u);
  EXPECT_EQ(b.view.nodes[0].type.gpus, 4) << "job 11's 4 GPUs; job 13's 4 are not Morph's";
  ASSERT_EQ(b.view.jobs.size(), 1u);
  EXPECT_EQ(b.view.jobs[0].current.gpus(), 4);
  // Left out of the view (here: its nodes do not match its record), it still holds them.
  s.jobs[0].nodes = {"a100-1", "a100-2"};
  const BuiltView left = build_view(s, context_);
  ASSERT_EQ(left.view.nodes.size(), 2u) << fmt::format("{}", fmt::join(left.skipped, "\n"));
  EXPECT_EQ(left.view.nodes[0].name, "a100-2");
  EXPECT_EQ(left.view.nodes[0].type.gpus, 4);
}

// Issue 15: a job spanning two GPU types is the policy's like any other: its slices are
// its nodes, the first group's first, with its groups; its GPUs are its own.
TEST_F(DaemonView, AHeterogeneousJobIsSeenWithItsGroups) {
  JobRecord r = parse_admin_comment(record("a100-80g", 2, 4, test::make_plan(8, 1, 1, 1, 1, 2)));
  r.current.gpu_type.clear();
  r.current.plan.micro_batch_size = 1;
  r.current.plan.zero_stage = 1;  // plain DP of 1.5B parameters does not fit a v100's 32 GB
  r.current.groups = {{"a100-80g", 1, 1, 3}, {"v100-32g", 1, 1, 1}};  // 4*3 + 4*1 = 16
  ClusterSnapshot s = with_comment(11, to_admin_comment(r));
  for (SlurmJob& j : s.jobs)
    if (j.id == 11) j.nodes = {"v100-1", "a100-1"};  // Slurm's order, not the groups'
  s.nodes[0].gpus_in_use = 4;  // the job's 4 on each of its nodes
  s.nodes[2].gpus_in_use = 4;
  config_.gpu_type_by_feature = true;
  config_.policy.heterogeneous_jobs = true;
  const BuiltView b = build_view(s, context_);
  EXPECT_TRUE(b.view.heterogeneous_jobs);
  ASSERT_EQ(b.jobs.count("11"), 1u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  const policy::JobState& j = b.view.jobs.front();
  ASSERT_EQ(j.id, "11");
  ASSERT_EQ(j.current.slices.size(), 2u);
  EXPECT_EQ(b.view.nodes[static_cast<std::size_t>(j.current.slices[0].node)].name, "a100-1");
  EXPECT_EQ(b.view.nodes[static_cast<std::size_t>(j.current.slices[1].node)].name, "v100-1");
  EXPECT_EQ(j.current.groups, r.current.groups);
  for (const policy::NodeState& n : b.view.nodes)
    if (n.name == "a100-1") {
      EXPECT_EQ(n.type.gpus, 8) << "the job's own GPUs are the policy's";
    }
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  EXPECT_GT(oracle.predict_s(j, j.current.plan, b.view.nodes, j.current.slices, j.current.groups), 0);

  // A record whose groups do not match the nodes the job runs on is left out, and said.
  for (SlurmJob& x : s.jobs)
    if (x.id == 11) x.nodes = {"a100-1", "a100-2"};
  const BuiltView wrong = build_view(s, context_);
  EXPECT_EQ(wrong.jobs.count("11"), 0u);
}

// The reconfiguration of a decision that spans two types: a requeue to a record with the
// groups, untyped, which job_submit_morph turns into a count constraint; and back.
TEST_F(DaemonView, AHeterogeneousDecisionIsARequeueToARecordWithGroups) {
  config_.gpu_type_by_feature = true;  // else the job stays on its GPU type (Slurm 22.05)
  config_.policy.heterogeneous_jobs = true;
  const BuiltView b = build_view(snapshot(), context_);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  int a100 = -1, v100 = -1;
  for (std::size_t i = 0; i < b.view.nodes.size(); ++i) {
    if (b.view.nodes[i].name == "a100-1") a100 = static_cast<int>(i);
    if (b.view.nodes[i].name == "v100-1") v100 = static_cast<int>(i);
  }
  ASSERT_GE(a100, 0);
  ASSERT_GE(v100, 0);
  const policy::Shape first{a100, 4, {4}};
  const policy::Shape second{v100, 4, {4}};
  const policy::JobState& j = b.view.jobs.front();
  const policy::PlanChoice& c = oracle.best_hetero(j, b.view.nodes, first, second);
  ASSERT_TRUE(c.feasible) << c.reason;
  const policy::JobAllocation spanning{{{a100, 4, 16, 0}, {v100, 4, 16, 0}}, c.plan, c.groups};
  std::vector<std::string> skipped;
  const auto plans = plan_reconfigurations(b, {{"11", spanning}}, oracle, &skipped);
  ASSERT_EQ(plans.size(), 1u) << fmt::format("{}", fmt::join(skipped, "; "));
  EXPECT_EQ(plans[0].path, Path::requeue);
  const JobRecord to = parse_admin_comment(plans[0].to_record);
  EXPECT_TRUE(to.current.heterogeneous());
  EXPECT_EQ(to.current.groups, c.groups);
  EXPECT_EQ(to.current.nodes, 2);
  EXPECT_EQ(to.current.gpus_per_node, 4);
  EXPECT_NEAR(to.current.iter_ms, c.iteration_s * 1e3, 1e-6 * c.iteration_s * 1e3);
  ASSERT_TRUE(to.baseline.has_value());
  EXPECT_EQ(to.baseline->gpu_type, "a100-80g") << "the request outlives the move";
  EXPECT_NE(plans[0].reason.find("a100-80g+v100-32g"), std::string::npos) << plans[0].reason;
}

TEST_F(DaemonView, EachDecisionTakesTheCheapestPathThatReachesIt) {
  const BuiltView b = build_view(snapshot(), context_);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  auto target = [](std::vector<policy::Slice> slices, ExecutionPlan plan) { return policy::JobAllocation{slices, plan}; };
  std::vector<std::string> skipped;
  const auto plans = plan_reconfigurations(
      b,
      {{"11", target({{0, 8, 32, 0}}, test::make_plan(4, 1, 2, 1, 2, 2))},   // other plan, same GPUs
       {"12", target({{1, 2, 8, 0}}, test::make_plan(2, 1, 1, 1, 1, 8))},   // start where it asked: nothing to do
       {"12", target({{1, 4, 16, 0}}, test::make_plan(4, 1, 1, 1, 1, 4))}},  // start on more
      oracle, &skipped);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].path, Path::inplace);
  EXPECT_EQ(plans[0].user_uid, 1000u);  // Slurm's, for a job the journal records first
  EXPECT_EQ(plans[1].user_uid, 1001u);
  EXPECT_EQ(parse_admin_comment(plans[0].to_record).current.plan.pp, 2);
  EXPECT_GT(parse_admin_comment(plans[0].to_record).current.iter_ms, 0);
  EXPECT_EQ(plans[1].path, Path::start);
  EXPECT_EQ(parse_admin_comment(plans[1].to_record).current.gpus(), 4);
  // The plan Morph gave at submission stays the job's request after the replan.
  const JobRecord before = parse_admin_comment(b.jobs.at("11").admin_comment);
  const JobRecord after = parse_admin_comment(plans[0].to_record);
  ASSERT_FALSE(before.baseline);
  ASSERT_TRUE(after.baseline);
  EXPECT_EQ(*after.baseline, before.current);
  EXPECT_EQ(build_view(with_comment(11, plans[0].to_record), context_).view.jobs[0].requested_plan, before.current.plan);
  const auto more = plan_reconfigurations(
      b, {{"11", target({{0, 4, 16, 0}}, test::make_plan(4, 1, 1, 1, 1, 4))}}, oracle, &skipped);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].path, Path::requeue);  // 4 GPUs per node instead of 8
  const auto two = plan_reconfigurations(
      b, {{"11", target({{0, 8, 32, 0}, {1, 8, 32, 0}}, test::make_plan(16, 1, 1, 1, 1, 1))}}, oracle, &skipped);
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].path, Path::requeue);  // a grow
  const auto none = plan_reconfigurations(b, {{"11", {}}}, oracle, &skipped);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].path, Path::preempt);
  const auto mixed = plan_reconfigurations(
      b, {{"12", target({{1, 2, 8, 0}, {2, 2, 8, 0}}, test::make_plan(4, 1, 1, 1, 1, 4))}}, oracle, &skipped);
  EXPECT_TRUE(mixed.empty());
  ASSERT_FALSE(skipped.empty());
  EXPECT_NE(skipped.back().find("mixes GPU types"), std::string::npos) << skipped.back();
  // A plan the model says cannot run there (tp 2 does not divide GPT-2's 25 heads).
  EXPECT_TRUE(plan_reconfigurations(b, {{"11", target({{0, 8, 32, 0}}, test::make_plan(4, 2, 1, 1, 1, 4))}}, oracle,
                                    &skipped).empty());
  EXPECT_NE(skipped.back().find("cannot run"), std::string::npos) << skipped.back();
  // Keeping a job as it is, is no reconfiguration.
  EXPECT_TRUE(plan_reconfigurations(b, {{"11", b.view.jobs[0].current}}, oracle, &skipped).empty());
}

// A running job's record alone cannot raise its host memory (Slurm refuses a running
// job's memory update that job_submit_morph makes follow): a plan that needs more of it
// per node is a requeue, not a change in place.
TEST_F(DaemonView, APlanThatNeedsMoreHostMemoryPerNodeIsARequeue) {
  const BuiltView b =
      build_view(with_record(11, [](JobRecord& r) { r.request.framework = Framework::deepspeed; }), context_);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  ExecutionPlan zero = test::make_plan(8, 1, 1, 1, 1, 2);
  zero.zero_stage = 2;
  ExecutionPlan offload = zero;
  offload.offload = true;
  ASSERT_GT(oracle.host_bytes_per_gpu(b.view.jobs[0], offload), oracle.host_bytes_per_gpu(b.view.jobs[0], zero));
  std::vector<std::string> skipped;
  const auto same = plan_reconfigurations(b, {{"11", policy::JobAllocation{{{0, 8, 32, 0}}, zero}}}, oracle, &skipped);
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].path, Path::inplace);
  const auto more = plan_reconfigurations(b, {{"11", policy::JobAllocation{{{0, 8, 32, 0}}, offload}}}, oracle, &skipped);
  ASSERT_EQ(more.size(), 1u) << fmt::format("{}", fmt::join(skipped, "\n"));
  EXPECT_EQ(more[0].path, Path::requeue);
  // Under the user's --mem, which both plans' need is below, the job holds enough already.
  const BuiltView floored = build_view(with_record(11,
                                                  [](JobRecord& r) {
                                                    r.request.framework = Framework::deepspeed;
                                                    r.memory_mb_per_node = 400 * 1024;
                                                  }),
                                      context_);
  policy::PlanOracle same_oracle(floored.apps, config_.memory, config_.max_gpus_per_job);
  ASSERT_LT(8 * same_oracle.host_bytes_per_gpu(floored.view.jobs[0], offload), 400.0 * 1024 * 1024 * 1024);
  const auto within = plan_reconfigurations(floored, {{"11", policy::JobAllocation{{{0, 8, 32, 0}}, offload}}},
                                            same_oracle, &skipped);
  ASSERT_EQ(within.size(), 1u);
  EXPECT_EQ(within[0].path, Path::inplace);
}

// A resized job on Slurm without slurmdbd (SlurmJob::record_locked): its in-place replan
// and its shrink are requeues, the only change slurmctld accepts.
TEST_F(DaemonView, ALockedRecordChangesOnlyThroughARequeue) {
  ClusterSnapshot s = snapshot();
  s.jobs[0].record_locked = true;
  const BuiltView b = build_view(s, context_);
  ASSERT_TRUE(b.view.jobs[0].record_locked);
  EXPECT_FALSE(b.view.jobs[1].record_locked);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  std::vector<std::string> skipped;
  const auto plans = plan_reconfigurations(
      b,
      {{"11", policy::JobAllocation{{{0, 8, 32, 0}}, test::make_plan(4, 1, 2, 1, 2, 2)}},
       {"12", policy::JobAllocation{{{1, 4, 16, 0}}, test::make_plan(4, 1, 1, 1, 1, 4)}}},
      oracle, &skipped);
  ASSERT_EQ(plans.size(), 2u) << fmt::format("{}", fmt::join(skipped, "\n"));
  EXPECT_EQ(plans[0].path, Path::requeue);
  EXPECT_EQ(plans[1].path, Path::start);
}

TEST_F(DaemonView, MorphdsOracleRefusesShapesARecordCannotHold) {
  const BuiltView b = build_view(snapshot(), context_);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  const policy::Shape mixed{1, 4, {4, 2}};
  EXPECT_TRUE(oracle.best(b.view.jobs[1], policy::PlanFreedom::any, b.view.nodes, mixed).feasible);
  oracle.require_uniform_nodes();
  const policy::PlanChoice c = oracle.best(b.view.jobs[1], policy::PlanFreedom::any, b.view.nodes, mixed);
  EXPECT_FALSE(c.feasible);
  EXPECT_EQ(c.reason, "Slurm gives every node of a job the same number of GPUs");
}

TEST_F(DaemonView, NoPolicyPlacesAJobOutsideTheGpusAndTypesItsUserAllowed) {
  JobRecord bounded = parse_admin_comment(record("a100-80g", 1, 2, test::make_plan(2, 1, 1, 1, 1, 8)));
  bounded.request.gpus_min = 2;
  bounded.request.gpus_max = 4;
  bounded.request.gpu_types = {"A100-80G"};  // the view canonicalises it
  const BuiltView b = build_view(with_comment(12, to_admin_comment(bounded)), context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "\n"));
  const policy::JobState& job = b.view.jobs[1];
  ASSERT_EQ(job.id, "12");
  EXPECT_NE(job.app, b.view.jobs[0].app);  // its bounds make it an application of its own
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  for (const policy::PlanFreedom freedom : {policy::PlanFreedom::any, policy::PlanFreedom::scale_dp}) {
    EXPECT_TRUE(oracle.best(job, freedom, b.view.nodes, policy::packed_shape(b.view.nodes, 1, 4)).feasible);
    const policy::PlanChoice eight = oracle.best(job, freedom, b.view.nodes, policy::packed_shape(b.view.nodes, 0, 8));
    EXPECT_FALSE(eight.feasible);
    EXPECT_EQ(eight.reason, "8 GPUs on 1 node: outside the job's 2-4 GPUs");
    EXPECT_FALSE(oracle.best(job, freedom, b.view.nodes, policy::packed_shape(b.view.nodes, 1, 1)).feasible);
    const policy::PlanChoice v100 = oracle.best(job, freedom, b.view.nodes, policy::packed_shape(b.view.nodes, 2, 4));
    EXPECT_FALSE(v100.feasible);
    EXPECT_EQ(v100.reason, "v100-32g is not among the job's GPU types");
  }
  // Morphling, with 13 GPUs free for it, keeps it within its bounds.
  const auto policy = policy::make_policy("morphling");
  for (const policy::Decision& d : policy->schedule(b.view, oracle))
    if (d.job == "12" && !d.target.empty()) {
      EXPECT_LE(d.target.gpus(), 4);
      EXPECT_GE(d.target.gpus(), 2);
      for (const policy::Slice& s : d.target.slices) EXPECT_EQ(b.view.nodes[s.node].gpu.name, "a100-80g");
    }
}

// Its user's -N likewise: the oracle refuses shapes on other node counts.
TEST_F(DaemonView, NoPolicyPlacesAJobOnMoreNodesThanItsUserAllowed) {
  JobRecord bounded = parse_admin_comment(record("a100-80g", 1, 2, test::make_plan(2, 1, 1, 1, 1, 8)));
  bounded.max_nodes = 1;
  const BuiltView b = build_view(with_comment(12, to_admin_comment(bounded)), context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "\n"));
  const policy::JobState& job = b.view.jobs[1];
  EXPECT_NE(job.app, b.view.jobs[0].app);
  EXPECT_EQ(b.apps.at(job.app).max_nodes, 1);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  EXPECT_TRUE(oracle.best(job, policy::PlanFreedom::any, b.view.nodes, policy::Shape{0, 4, {4}}).feasible);
  const policy::PlanChoice spread = oracle.best(job, policy::PlanFreedom::any, b.view.nodes, policy::Shape{0, 4, {2, 2}});
  EXPECT_FALSE(spread.feasible);
  EXPECT_EQ(spread.reason, "4 GPUs on 2 nodes: outside the job's 1 node");
}

// The partitions slurmctld has now bound a job as its record does: a pending job is
// planned on the GPU types they hold, within their MaxNodes, and left out where they hold
// none of its types; a running job may stay as it runs. job_submit_morph bounded the
// record by slurm.conf's partitions when slurmctld started; these were made or changed
// since (scontrol create/update partition).
TEST_F(DaemonView, AJobIsPlannedWithinItsPartitionsAsSlurmctldHasThem) {
  const std::vector<SlurmPartition> partitions = {{"gpu", {}, true, 0, true},
                                                  {"old", {"v100-1"}, false, 1, false},
                                                  {"big", {"a100-1", "a100-2", "v100-1"}, false, 2, false}};
  const auto job_app = [](const BuiltView& b, const std::string& id) -> const policy::AppProfile* {
    for (const policy::JobState& j : b.view.jobs)
      if (j.id == id) return &b.apps.at(j.app);
    return nullptr;
  };
  ClusterSnapshot s = snapshot();
  s.partitions = partitions;
  // Under GpuTypeBy=gres a pending job keeps its type: a partition without it leaves the
  // job out, with the reason.
  s.jobs[1].partition = "old";
  BuiltView b = build_view(s, context_);
  EXPECT_EQ(job_app(b, "12"), nullptr);
  EXPECT_NE(std::find(b.skipped.begin(), b.skipped.end(),
                      "job 12: partition old holds none of the GPU types it may use"),
            b.skipped.end()) << fmt::format("{}", fmt::join(b.skipped, "; "));
  // Under GpuTypeBy=feature it goes on the partition's V100, one node at most.
  std::string conf = test::kDaemonConf;
  conf.replace(conf.find("Nics=2"), 6, "Nics=2 Features=a100");
  conf.replace(conf.find("Nics=1"), 6, "Nics=1 Features=v100");
  config_ = parse_morph_conf("GpuTypeBy=feature\n" + conf, "test.conf");
  b = build_view(s, context_);
  ASSERT_NE(job_app(b, "12"), nullptr) << fmt::format("{}", fmt::join(b.skipped, "; "));
  EXPECT_EQ(job_app(b, "12")->gpu_types, std::vector<std::string>{"v100-32g"});
  EXPECT_EQ(job_app(b, "12")->max_nodes, 1);
  // -p old,big: both types, the larger MaxNodes; the default partition bounds nothing.
  s.jobs[1].partition = "old,big";
  b = build_view(s, context_);
  EXPECT_TRUE(job_app(b, "12")->gpu_types.empty());
  EXPECT_EQ(job_app(b, "12")->max_nodes, 2);
  s.jobs[1].partition = "gpu";
  b = build_view(s, context_);
  EXPECT_EQ(job_app(b, "12")->max_nodes, 0);
  // Job 11 runs on an A100 node of a partition that holds only the V100 now: it keeps
  // its type beside the partition's.
  s.jobs[0].partition = "old";
  b = build_view(s, context_);
  ASSERT_NE(job_app(b, "11"), nullptr);
  EXPECT_EQ(job_app(b, "11")->gpu_types, (std::vector<std::string>{"v100-32g", "a100-80g"}));
  EXPECT_EQ(job_app(b, "11")->max_nodes, 1);
  // Without partitions (slurmctld did not answer) nothing is bounded.
  s.partitions.clear();
  s.jobs[1].partition = "old";
  b = build_view(s, context_);
  EXPECT_TRUE(job_app(b, "12")->gpu_types.empty());
  EXPECT_EQ(job_app(b, "12")->max_nodes, 0);
}

// A partition that holds some of a GPU type's nodes: Slurm starts the job only there, so
// no policy plans it on more nodes of the type than the partition holds, nor on nodes
// outside it (before, morphd counted every node of the type and could grow a pending job
// onto both A100 nodes of a partition of one, or start it on the other, where Slurm never
// starts it). A running job may keep what it runs on.
TEST_F(DaemonView, NoPolicyPlansAJobOnMoreNodesOfATypeThanItsPartitionsHold) {
  ClusterSnapshot s = snapshot();
  s.partitions = {{"gpu", {}, true, 0, true}, {"one", {"a100-2", "v100-1"}, false, 0, false},
                  {"big", {"a100-1", "a100-2", "v100-1"}, false, 0, false}};
  s.jobs[1].partition = "one";
  BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  const policy::JobState& job = b.view.jobs[1];
  ASSERT_EQ(job.id, "12");
  const policy::AppProfile& app = b.apps.at(job.app);
  EXPECT_EQ(app.nodes_of_type, (std::map<std::string, int>{{"a100-80g", 1}}));
  EXPECT_EQ(app.max_nodes, 0);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  EXPECT_TRUE(oracle.best(job, policy::PlanFreedom::any, b.view.nodes, policy::Shape{0, 4, {8}}).feasible);
  const policy::PlanChoice two = oracle.best(job, policy::PlanFreedom::any, b.view.nodes, policy::Shape{0, 4, {4, 4}});
  EXPECT_FALSE(two.feasible);
  EXPECT_EQ(two.reason, "2 a100-80g nodes: the job's partitions hold 1");
  EXPECT_EQ(job.nodes_allowed, (std::vector<bool>{false, true, true}));  // a100-1, a100-2, v100-1
  // Morphling starts it on a100-2, the partition's A100 node (5 GPUs free), where it
  // used to take a100-1's by shrinking job 11; job 11, on no node of job 12's partition,
  // keeps its 8 GPUs.
  const auto policy = policy::make_policy("morphling");
  bool placed = false;
  int job_11_gpus = 0;
  for (const policy::Decision& d : policy->schedule(b.view, oracle)) {
    if (d.job == "12" && !d.target.empty()) {
      placed = true;
      for (const policy::Slice& sl : d.target.slices) EXPECT_EQ(b.view.nodes[sl.node].name, "a100-2");
    }
    if (d.job == "11") job_11_gpus = d.target.gpus();
  }
  EXPECT_TRUE(placed);
  EXPECT_EQ(job_11_gpus, 8);
  // -p one,solo: Slurm runs it in one of them, so one A100 node at most still.
  s.partitions.push_back({"solo", {"a100-1"}, false, 0, false});
  s.jobs[1].partition = "one,solo";
  b = build_view(s, context_);
  EXPECT_EQ(b.apps.at(b.view.jobs[1].app).nodes_of_type, (std::map<std::string, int>{{"a100-80g", 1}}));
  EXPECT_TRUE(b.view.jobs[1].nodes_allowed.empty());  // but on any of them
  // A partition with every node of the types: no bound, the same application as without.
  s.jobs[1].partition = "big";
  b = build_view(s, context_);
  EXPECT_TRUE(b.apps.at(b.view.jobs[1].app).nodes_of_type.empty());
  EXPECT_EQ(b.view.jobs[1].app, build_view(snapshot(), context_).view.jobs[1].app);
  // Job 11 runs on two A100 nodes of a partition that holds one now: it may stay so.
  JobRecord wide = parse_admin_comment(record("a100-80g", 2, 4, test::make_plan(8, 1, 1, 1, 1, 2)));
  s = with_comment(11, to_admin_comment(wide));
  s.jobs[0].nodes = {"a100-1", "a100-2"};
  s.nodes[0].gpus_in_use = 4;
  s.nodes[1].gpus_in_use = 7;
  s.partitions = {{"one", {"a100-2"}, false, 0, true}};
  b = build_view(s, context_);
  ASSERT_FALSE(b.view.jobs.empty()) << fmt::format("{}", fmt::join(b.skipped, "; "));
  ASSERT_EQ(b.view.jobs[0].id, "11");
  EXPECT_EQ(b.apps.at(b.view.jobs[0].app).nodes_of_type, (std::map<std::string, int>{{"a100-80g", 2}}));
}

// Free GPUs outside a job's partitions are not free to it. Job 12 may run on a100-1 only,
// where job 11 holds all 8 GPUs; a100-2's 8 are free. The round used to count those as
// job 12's (free GPUs per type), found no room on a100-1 when it placed it, and left it
// waiting with job 11 untouched, round after round. Now job 12 draws only on a100-1's
// GPUs (policy/free_cells.h): job 11 gives up some of them, and job 12 starts there.
TEST_F(DaemonView, FreeGpusOutsideAJobsPartitionsDoNotKeepItWaiting) {
  ClusterSnapshot s = snapshot();
  s.nodes[1].gpus_in_use = 0;
  s.jobs.erase(s.jobs.begin() + 2);  // job 13, on a100-2
  s.partitions = {{"gpu", {}, true, 0, true}, {"solo", {"a100-1"}, false, 0, false}};
  s.jobs[1].partition = "solo";
  const BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  ASSERT_EQ(b.view.jobs[1].id, "12");
  EXPECT_EQ(b.view.jobs[1].nodes_allowed, (std::vector<bool>{true, false, false}));
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  const policy::FreeCells cells(b.view, policy::NodePool(b.view.nodes));
  ASSERT_EQ(cells.cells(), 3);  // a100-1, a100-2, v100-1
  EXPECT_TRUE(cells.reaches(1, cells.cell_of_node(0)));
  EXPECT_FALSE(cells.reaches(1, cells.cell_of_node(1)));
  EXPECT_TRUE(cells.reaches(0, cells.cell_of_node(1)));
  EXPECT_EQ(cells.order(0, 0), (std::vector<int>{cells.cell_of_node(1), cells.cell_of_node(0)}));  // a100-2 first
  // Job 11, which gave up a100-1's GPUs and regrew on a100-2's, moves there: it is placed
  // after job 12, which may run on fewer nodes.
  for (const std::string name : {"morphling", "sia"}) {
    int job_12_gpus = 0;
    for (const policy::Decision& d : policy::make_policy(name)->schedule(b.view, oracle)) {
      const std::string node = d.job == "12" ? "a100-1" : "a100-2";
      for (const policy::Slice& sl : d.target.slices) EXPECT_EQ(b.view.nodes[sl.node].name, node) << name;
      if (d.job == "12") job_12_gpus = d.target.gpus();
    }
    EXPECT_GT(job_12_gpus, 0) << name;
  }
}

// Job 11 runs on both A100 nodes; job 12 may run on a100-1 only. Job 11 gives up
// a100-1's GPUs for it, but a shrink would keep a100-1 (Slurm keeps a job's first nodes):
// it moves to a100-2 instead, and job 12 starts on a100-1. It used to shrink onto
// a100-1, job 12 could not be placed, and a100-2 stood idle.
TEST_F(DaemonView, AJobThatGaveUpANodeARestrictedJobNeedsDoesNotShrinkOntoIt) {
  ClusterSnapshot s = snapshot();
  s.nodes[0].gpus_in_use = s.nodes[1].gpus_in_use = 8;
  s.jobs.erase(s.jobs.begin() + 2);  // job 13, on a100-2
  s.jobs[0].admin_comment = record("a100-80g", 2, 8, test::make_plan(16, 1, 1, 1, 1, 1));
  s.jobs[0].nodes = {"a100-1", "a100-2"};
  s.partitions = {{"gpu", {}, true, 0, true}, {"solo", {"a100-1"}, false, 0, false}};
  s.jobs[1].partition = "solo";
  const BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  ASSERT_EQ(b.view.jobs[0].current.gpus(), 16);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  int job_12_gpus = 0;
  for (const policy::Decision& d : policy::make_policy("morphling")->schedule(b.view, oracle)) {
    const std::string node = d.job == "12" ? "a100-1" : "a100-2";
    for (const policy::Slice& sl : d.target.slices) EXPECT_EQ(b.view.nodes[sl.node].name, node) << d.job;
    if (d.job == "12") job_12_gpus = d.target.gpus();
  }
  EXPECT_GT(job_12_gpus, 0);
}

// -p ab,c: Slurm starts the job in one of them, so two A100 nodes must both be ab's; a
// placement on a100-2 and a100-3 would never start. Of a type of which one partition holds
// several nodes the job may use only that one's; of a type each holds one node of, any.
TEST_F(DaemonView, AJobOfSeveralPartitionsIsPlacedOnOneOfThemPerGpuType) {
  std::string conf = test::kDaemonConf;
  conf.replace(conf.find("NodeName=v100-1"), 0, "NodeName=a100-3 NodeType=emu-a100\n");
  config_ = parse_morph_conf(conf, "test.conf");
  ClusterSnapshot s = snapshot();
  s.nodes.insert(s.nodes.begin() + 2, {"a100-3", true, 0});
  s.partitions = {{"gpu", {}, true, 0, true}, {"ab", {"a100-1", "a100-2"}, false, 0, false},
                  {"c", {"a100-3", "v100-1"}, false, 0, false}};
  s.jobs[1].partition = "ab,c";
  const BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  ASSERT_EQ(b.view.nodes.size(), 4u);
  EXPECT_EQ(b.view.nodes[2].name, "a100-3");
  EXPECT_EQ(b.view.jobs[1].nodes_allowed, (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(b.apps.at(b.view.jobs[1].app).nodes_of_type, (std::map<std::string, int>{{"a100-80g", 2}}));
  // Nor does it span GPU types: its a100 nodes are ab's, its v100 node c's.
  EXPECT_TRUE(b.apps.at(b.view.jobs[1].app).one_gpu_type);
  EXPECT_FALSE(b.apps.at(b.view.jobs[0].app).one_gpu_type);
}

// What a job's record asks of every node (its user's --constraint under GpuTypeBy=feature,
// --mincpus, --mem) keeps it on the GPU types whose nodes hold it: an update onto other
// nodes would leave it pending for ever. A --constraint also keeps it on one GPU type,
// since a heterogeneous placement's count constraint cannot carry it.
TEST_F(DaemonView, AJobIsPlannedOnlyWhereItsRecordsFloorsHold) {
  std::string conf = test::kDaemonConf;
  conf.replace(conf.find("Nics=2"), 6, "Nics=2 Features=a100,ib");
  conf.replace(conf.find("Nics=1"), 6, "Nics=1 Features=v100");
  config_ = parse_morph_conf("GpuTypeBy=feature\nHeterogeneousJobs=yes\n" + conf, "test.conf");
  const JobRecord plain = parse_admin_comment(record("a100-80g", 1, 2, test::make_plan(2, 1, 1, 1, 1, 8)));
  auto view_of = [&](const JobRecord& r) {
    BuiltView b = build_view(with_comment(12, to_admin_comment(r)), context_);
    EXPECT_EQ(b.jobs.count("12"), 1u) << fmt::format("{}", fmt::join(b.skipped, "; "));
    return b;
  };
  auto types_of = [&](const JobRecord& r) {
    const BuiltView b = view_of(r);
    return b.apps.at(b.view.jobs.back().app).gpu_types;
  };
  const std::vector<std::string> any, a100{"a100-80g"};
  EXPECT_EQ(types_of(plain), any);

  JobRecord r = plain;
  r.constraint = "ib";  // only the a100 nodes have it
  EXPECT_EQ(types_of(r), a100);
  r.constraint = "a100|v100";
  EXPECT_EQ(types_of(r), any);
  r = plain;
  r.min_cpus_per_node = 20;  // the v100 nodes have 16
  EXPECT_EQ(types_of(r), a100);
  r = plain;
  r.memory_mb_per_node = 200000;  // the v100 nodes have 128 GiB, 131,072 MB
  EXPECT_EQ(types_of(r), a100);
  r.memory_mb_per_node = 131072;
  EXPECT_EQ(types_of(r), any);
  r.request.gpu_types = {"V100-32G"};  // its user's list, canonical, within the floors
  EXPECT_EQ(types_of(r), std::vector<std::string>{"v100-32g"});
  r.memory_mb_per_node = 200000;  // no type of its list holds it: it keeps the one it has
  EXPECT_EQ(types_of(r), a100);
  r = plain;
  r.min_cpus_per_node = 64;  // no node holds it
  EXPECT_EQ(types_of(r), a100);

  // The policy's oracle refuses the v100 nodes for a job of --mincpus=20, and any
  // placement across two types for a job of --constraint=a100|v100.
  r = plain;
  r.min_cpus_per_node = 20;
  BuiltView b = view_of(r);
  int a100_node = -1, v100_node = -1;
  for (std::size_t i = 0; i < b.view.nodes.size(); ++i) {
    if (b.view.nodes[i].name == "a100-1") a100_node = static_cast<int>(i);
    if (b.view.nodes[i].name == "v100-1") v100_node = static_cast<int>(i);
  }
  ASSERT_GE(a100_node, 0);
  ASSERT_GE(v100_node, 0);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  const policy::JobState& job = b.view.jobs.back();
  EXPECT_TRUE(oracle.best(job, policy::PlanFreedom::any, b.view.nodes, policy::packed_shape(b.view.nodes, a100_node, 4)).feasible);
  const policy::PlanChoice v100 =
      oracle.best(job, policy::PlanFreedom::any, b.view.nodes, policy::packed_shape(b.view.nodes, v100_node, 4));
  EXPECT_FALSE(v100.feasible);
  EXPECT_EQ(v100.reason, "v100-32g is not among the job's GPU types");

  const policy::Shape first{a100_node, 4, {4}}, second{v100_node, 4, {4}};
  r = plain;
  b = view_of(r);
  policy::PlanOracle free_oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  EXPECT_TRUE(free_oracle.best_hetero(b.view.jobs.back(), b.view.nodes, first, second).feasible);
  r.constraint = "a100|v100";
  b = view_of(r);
  EXPECT_TRUE(b.apps.at(b.view.jobs.back().app).one_gpu_type);
  policy::PlanOracle bound_oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  const policy::PlanChoice& spanning = bound_oracle.best_hetero(b.view.jobs.back(), b.view.nodes, first, second);
  EXPECT_FALSE(spanning.feasible);
  EXPECT_EQ(spanning.reason, "the job keeps one GPU type");
}

TEST_F(DaemonView, MorphlingsDecisionsOnTheViewBecomeValidRecords) {
  const BuiltView b = build_view(snapshot(), context_);
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  oracle.require_uniform_nodes();  // as morphd's scheduler does
  const auto policy = policy::make_policy("morphling");
  const std::vector<policy::Decision> decisions = policy->schedule(b.view, oracle);
  ASSERT_EQ(decisions.size(), b.view.jobs.size());
  std::vector<std::string> skipped;
  bool starts_pending = false;
  for (const Reconfiguration& r : plan_reconfigurations(b, decisions, oracle, &skipped)) {
    const JobRecord next = parse_admin_comment(r.to_record);  // canonical and self-consistent
    EXPECT_EQ(next.current.plan.gpus(), next.current.gpus());
    EXPECT_EQ(next.current.plan.global_batch(), 16);
    starts_pending |= r.job == 12 && r.path == Path::start;
  }
  for (const std::string& why : skipped) EXPECT_EQ(why.find("mixes"), std::string::npos) << why;
  for (const policy::Decision& d : decisions)
    for (const policy::Slice& slice : d.target.slices) {
      EXPECT_EQ(slice.gpus, d.target.slices.front().gpus) << d.job;
      // A job keeps its GPU type (Slurm leaves a pending job whose type changed never runnable).
      EXPECT_EQ(b.view.nodes[slice.node].gpu.name, b.jobs.at(d.job).record.current.gpu_type) << d.job;
    }
  // The pending job starts on what is free (5 a100 GPUs beside the other job, 4 v100),
  // unless the policy kept it exactly where its request already points.
  const auto pending = std::find_if(decisions.begin(), decisions.end(), [](const auto& d) { return d.job == "12"; });
  ASSERT_NE(pending, decisions.end());
  EXPECT_FALSE(pending->target.empty());
  EXPECT_TRUE(starts_pending || parse_admin_comment(b.jobs.at("12").admin_comment).current.plan == pending->target.plan);
}

TEST_F(DaemonView, WhatAJobReportedFillsItsState) {
  // Job 11 (best effort, dp=8 on a100-1 since 200) reported 0.3 s iterations after its start.
  JobHistories histories;
  for (int i = 0; i < 4; ++i)
    histories[11].observations.push_back({11, 300 + i, i, 0.3, 16, "dp=8,tp=1,pp=1,zero=0"});
  const BuiltView b = build_view(snapshot(), context_, histories);
  EXPECT_DOUBLE_EQ(b.view.jobs[0].measured_iteration_s, 0.3);
  EXPECT_EQ(b.measured.at("11").observations, 4);
  EXPECT_DOUBLE_EQ(b.view.jobs[1].measured_iteration_s, 0);  // job 12 has no history
  EXPECT_EQ(b.measured.count("12"), 0u);
  EXPECT_DOUBLE_EQ(build_view(snapshot(), context_).view.jobs[0].measured_iteration_s, 0);
}

// Another user's job on a node leaves Morph a share of it, a node of its node type all
// the same (policy::NodeState::node_type()): job 11 on a share and a whole node is on one
// type, and its 8 GPUs on two halves are not on the fewest nodes (one whole node holds them).
TEST_F(DaemonView, ANodeOthersPartlyUseKeepsItsNodeType) {
  ClusterSnapshot s = snapshot();
  s.nodes = {{"a100-1", true, 4}, {"a100-2", true, 8}, {"v100-1", true, 0}};  // a100-2: another user's 4 too
  s.jobs = {SlurmJob{11, 1000, JobPhase::running, false, record("a100-80g", 2, 4, test::make_plan(8, 1, 1, 1, 1, 2)),
                     {"a100-1", "a100-2"}, 100, 200, 0, 0}};
  const BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.nodes.size(), 3u);
  ASSERT_EQ(b.view.jobs.size(), 1u) << fmt::format("{}", fmt::join(b.skipped, "\n"));
  const policy::NodeState& shared = b.view.nodes[1];
  EXPECT_EQ(shared.type.gpus, 4);
  EXPECT_EQ(shared.node_type().name, "emu-a100");
  EXPECT_EQ(shared.node_type().gpus, 8);
  EXPECT_EQ(policy::shape_of(b.view.nodes, b.view.jobs[0].current.slices).gpus, (std::vector<int>{4, 4}));
  EXPECT_FALSE(policy::on_fewest_nodes(b.view.nodes, b.view.jobs[0].current));
  s.nodes[0].gpus_in_use = 8;  // another user's 4 on a100-1 as well
  const BuiltView halves = build_view(s, context_);
  ASSERT_EQ(halves.view.jobs.size(), 1u);
  EXPECT_FALSE(policy::on_fewest_nodes(halves.view.nodes, halves.view.jobs[0].current));
}

// A job on a node others partly use, with more CPUs per GPU than the node's share: the view
// gave the share 16 of 32 CPUs while the record held 24, and every policy's round threw
// ("slice ... exceeds what is free") for the whole cluster, round after round.
TEST_F(DaemonView, AJobHoldingMoreCpusThanItsShareOfANodeDoesNotFailTheRound) {
  ClusterSnapshot s = snapshot();
  s.nodes = {{"a100-1", true, 0}, {"a100-2", true, 8}, {"v100-1", true, 0}};  // another user's 4 on a100-2
  JobRecord r = parse_admin_comment(record("a100-80g", 1, 4, test::make_plan(4, 1, 1, 1, 1, 4)));
  r.current.cpus_per_gpu = 6;
  s.jobs = {SlurmJob{11, 1000, JobPhase::running, false, to_admin_comment(r), {"a100-2"}, 100, 200, 0, 0}};
  const BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 1u) << fmt::format("{}", fmt::join(b.skipped, "\n"));
  EXPECT_EQ(b.view.nodes[1].type.cpus, 16);
  EXPECT_EQ(b.view.jobs[0].current.slices[0].cpus, 16);
  EXPECT_NE(std::find(b.skipped.begin(), b.skipped.end(),
                      "node a100-2: its Morph jobs' records hold 24 CPUs, the view 16: scaled down to fit"),
            b.skipped.end())
      << fmt::format("{}", fmt::join(b.skipped, "\n"));
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  for (const std::string& name : policy::policy_names()) {
    std::vector<policy::Decision> d;
    EXPECT_NO_THROW(d = policy::make_policy(name)->schedule(b.view, oracle)) << name;
  }
}

// Review of the policies: morphd's running jobs held no host memory in the view (their
// slices' memory_bytes was 0), so a ZeRO-Offload job could be placed on a node whose
// memory another offload job already held, and a job's in-place replan was searched
// without a bound. Each running slice holds its plan's host memory, --mem a floor, and
// scaled down to what the node's share has when the records hold more.
TEST_F(DaemonView, ARunningJobHoldsItsPlansHostMemoryOnEachNode) {
  ExecutionPlan offload = test::make_plan(8, 1, 1, 1, 1, 2);
  offload.zero_stage = 2;
  offload.offload = true;
  const auto offloaded = [&](std::int64_t mem_mb) {
    return with_record(11, [&](JobRecord& r) {
      r.request.framework = Framework::deepspeed;
      r.current.plan = offload;
      r.memory_mb_per_node = mem_mb;
    });
  };
  const BuiltView b = build_view(offloaded(0), context_);
  ASSERT_EQ(b.view.jobs[0].id, "11");
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  const double need = 8 * oracle.host_bytes_per_gpu(b.view.jobs[0], offload);
  ASSERT_GT(need, 0);
  ASSERT_EQ(b.view.jobs[0].current.slices.size(), 1u);
  EXPECT_DOUBLE_EQ(b.view.jobs[0].current.slices[0].memory_bytes, need);
  const BuiltView floored = build_view(offloaded(200 * 1024), context_);  // --mem=200G, above the plan's
  ASSERT_LT(need, 200.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(floored.view.jobs[0].current.slices[0].memory_bytes, 200.0 * 1024 * 1024 * 1024);
  const BuiltView over = build_view(offloaded(300 * 1024), context_);  // more than a100-1's 256 GiB
  EXPECT_DOUBLE_EQ(over.view.jobs[0].current.slices[0].memory_bytes, over.view.nodes[0].type.host_memory_bytes);
  EXPECT_NE(std::find_if(over.skipped.begin(), over.skipped.end(),
                         [](const std::string& line) { return line.starts_with("node a100-1: its Morph jobs hold"); }),
            over.skipped.end())
      << fmt::format("{}", fmt::join(over.skipped, "\n"));
}

// A guaranteed job's promise is its request on the nodes it asked for, counted in the
// GPUs those nodes have, not in what other users' jobs leave of them this round: on
// the whole of a100-2 while another user holds half of a100-1 it learns its promise;
// spread over the free halves of both it does not, nor once requeued while other jobs
// hold every A100.
TEST_F(DaemonView, AGuaranteedJobsPromiseDoesNotDependOnOtherJobsOnItsNodes) {
  const ExecutionPlan eight = test::make_plan(8, 1, 1, 1, 1, 2);
  JobRecord r = parse_admin_comment(record("a100-80g", 1, 8, eight));
  r.request.sla = Sla::guaranteed;
  r.request.sla_given = true;
  auto promise = [&](int nodes, std::vector<std::string> on, std::vector<SlurmNode> slurm_nodes) {
    r.current.nodes = nodes;
    r.current.gpus_per_node = 8 / nodes;
    ClusterSnapshot s;
    s.now_s = 1000;
    s.nodes = std::move(slurm_nodes);
    const JobPhase phase = on.empty() ? JobPhase::pending : JobPhase::running;
    s.jobs = {SlurmJob{11, 1000, phase, false, to_admin_comment(r), on, 100, 200, 0, 0}};
    JobHistories h;
    h[11].plans.push_back({11, 200, s.jobs[0].admin_comment, "a100-80g", nodes, 8 / nodes, 0, std::nullopt});
    for (int i = 0; i < 4; ++i) h[11].observations.push_back({11, 300 + i, i, 0.3, 16, "dp=8,tp=1,pp=1,zero=0"});
    const BuiltView b = build_view(s, context_, h);
    EXPECT_EQ(b.view.jobs.size(), 1u) << fmt::format("{}", fmt::join(b.skipped, "\n"));
    return b.view.jobs.empty() ? -1.0 : b.view.jobs[0].promised_iteration_s;
  };
  // 4 of a100-1's GPUs are another user's; job 11 holds all of a100-2.
  EXPECT_DOUBLE_EQ(promise(1, {"a100-2"}, {{"a100-1", true, 4}, {"a100-2", true, 8}, {"v100-1", true, 0}}), 0.3);
  // 4 + 4 of its 8 GPUs on two nodes, another user's 4 next to them on each.
  EXPECT_DOUBLE_EQ(promise(2, {"a100-1", "a100-2"}, {{"a100-1", true, 8}, {"a100-2", true, 8}, {"v100-1", true, 0}}),
                   0);
  EXPECT_DOUBLE_EQ(promise(2, {}, {{"a100-1", true, 8}, {"a100-2", true, 8}, {"v100-1", true, 0}}), 0);
}

// Job 11 as a best-effort torch job of --morph-adaptive-batch=16:1024 (its plan as
// given), and what its trainer reported: `adaptations` steps of 10 iterations, the batch
// growing by 10% at each (SimiGrad's rule below γ), an iteration taking 10 ms per sample.
ClusterSnapshot adaptive_snapshot(ClusterSnapshot s, Framework framework = Framework::torch) {
  for (SlurmJob& j : s.jobs)
    if (j.id == 11) {
      JobRecord r = parse_admin_comment(j.admin_comment);
      r.request.framework = framework;
      set_morph_option(r.request, "adaptive-batch", "16:1024");
      j.admin_comment = to_admin_comment(r);
    }
  return s;
}

JobHistories adaptive_history(int adaptations) {
  JobHistories h;
  double batch = 16;
  std::int64_t step = 0;
  for (int k = 0; k < adaptations; ++k, batch = std::round(batch * 1.1))
    for (int i = 0; i < 10; ++i)
      h[11].observations.push_back({11, 300 + step, ++step, 0.01 * batch, static_cast<std::int64_t>(batch),
                                    "dp=8,tp=1,pp=1,zero=0"});
  for (const store::Observation& o : h[11].observations) h[11].step_batches.push_back({o.step, o.samples});
  return h;
}

// JABAS's auto-scaling in morphd (seed 004 §6.3): after each whole epoch (AdaptiveEpochSteps
// adaptation steps) an adaptive job is planned for the mean of the next epoch's forecast
// batches; its plan runs that batch, and its iterations count at it.
TEST_F(DaemonView, AnAdaptiveJobIsPlannedForItsForecastBatch) {
  const BuiltView b = build_view(adaptive_snapshot(snapshot()), context_, adaptive_history(20));
  ASSERT_EQ(b.forecasts.count("11"), 1u);
  const EpochBatch& e = b.forecasts.at("11");
  EXPECT_EQ(e.epochs, 2);
  const policy::JobState& job = b.view.jobs[0];
  ASSERT_EQ(job.id, "11");
  const double last_seen = std::round(16 * std::pow(1.1, 19));  // about 98
  EXPECT_GT(static_cast<double>(job.workload.global_batch), last_seen) << "the batch keeps growing";
  EXPECT_EQ(job.workload.global_batch, e.batch);
  EXPECT_EQ(job.workload.global_batch % 16, 0) << "a batch dp=8 x mbs=2 runs";
  EXPECT_EQ(job.current.plan.global_batch(), e.batch);
  EXPECT_EQ(job.current.plan.micro_batch_size, 2);
  EXPECT_NE(job.app.find(fmt::format(":b{}:", e.batch)), std::string::npos) << job.app;
  EXPECT_EQ(b.apps.at(job.app).workload.global_batch, e.batch);
  // 10 ms per sample at whatever batch it ran: at the planned batch, 10 ms times that.
  EXPECT_NEAR(job.measured_iteration_s, 0.01 * static_cast<double>(e.batch), 1e-9);

  // Within the epoch nothing moves; a new epoch plans anew.
  EXPECT_EQ(build_view(adaptive_snapshot(snapshot()), context_, adaptive_history(27)).view.jobs[0].workload.global_batch,
            e.batch);
  EXPECT_GT(build_view(adaptive_snapshot(snapshot()), context_, adaptive_history(30)).view.jobs[0].workload.global_batch,
            e.batch);

  // The policy's decision for it is a record its trainer can run: a batch within the bounds.
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  oracle.require_uniform_nodes();
  const std::vector<policy::Decision> decisions = policy::make_policy("morphling")->schedule(b.view, oracle);
  std::vector<std::string> skipped;
  // (Here a reconfiguration: the plan of dp=8 at batch 16 is no longer the best.)
  int changes = 0;
  for (const Reconfiguration& r : plan_reconfigurations(b, decisions, oracle, &skipped)) {
    if (r.job != 11) continue;
    EXPECT_EQ(parse_admin_comment(r.to_record).current.plan.global_batch(), e.batch);
    ++changes;
  }
  EXPECT_EQ(changes, 1);
}

TEST_F(DaemonView, OnlyBestEffortTorchJobsAreAutoScaled) {
  auto planned_batch = [&](const ClusterSnapshot& s, const ViewContext& context) {
    return build_view(s, context, adaptive_history(20)).view.jobs[0].workload.global_batch;
  };
  EXPECT_GT(planned_batch(adaptive_snapshot(snapshot()), context_), 16);
  EXPECT_EQ(planned_batch(adaptive_snapshot(snapshot(), Framework::megatron), context_), 16)
      << "Megatron-LM runs the batch it is given";
  MorphConfig off = config_;
  off.policy.adaptive_epoch_steps = 0;
  EXPECT_EQ(planned_batch(adaptive_snapshot(snapshot()), ViewContext{off, catalog_, perf_}), 16);
  MorphConfig guaranteed = config_;
  guaranteed.policy.guaranteed_by_default = true;  // job 11 gave no SLA
  EXPECT_EQ(planned_batch(adaptive_snapshot(snapshot()), ViewContext{guaranteed, catalog_, perf_}), 16)
      << "a guaranteed job is held to the speed of its starting batch";
  EXPECT_EQ(build_view(snapshot(), context_, adaptive_history(20)).view.jobs[0].workload.global_batch, 16)
      << "a job of one batch";
}

// A maintenance reservation on a100-2 (or any reservation job 12 is not in): slurmctld
// starts no job outside it there, so no policy plans job 12 there. Its nodes counted as
// usable, and the policy started job 12 on a100-2's free GPUs, where Slurm never starts
// it. A job of the reservation runs only there.
TEST_F(DaemonView, AJobIsPlannedOnlyWhereReservationsLetSlurmStartIt) {
  ClusterSnapshot s = snapshot();
  s.nodes[1].gpus_in_use = 0;
  s.jobs.erase(s.jobs.begin() + 2);  // job 13, on a100-2
  SlurmReservation maint{"maint", {"a100-2"}, false, 900, 4600};
  maint.maint = true;
  s.reservations = {maint};
  const auto nodes_of_12 = [&](const BuiltView& b) {
    policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
    std::set<std::string> nodes;
    for (const policy::Decision& d : policy::make_policy("morphling")->schedule(b.view, oracle))
      if (d.job == "12")
        for (const policy::Slice& sl : d.target.slices) nodes.insert(b.view.nodes[sl.node].name);
    return nodes;
  };
  BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  ASSERT_EQ(b.view.jobs[1].id, "12");
  EXPECT_EQ(b.view.jobs[1].nodes_allowed, (std::vector<bool>{true, false, true}));  // a100-1, a100-2, v100-1
  EXPECT_EQ(nodes_of_12(b).count("a100-2"), 0u);
  // Job 11 keeps its GPUs on a100-1 and may not move onto a100-2 either.
  EXPECT_EQ(b.view.jobs[0].current.gpus(), 8);
  EXPECT_EQ(b.view.jobs[0].nodes_allowed, (std::vector<bool>{true, false, true}));
  // One that starts before job 12's time limit would end keeps it off too; none: a year.
  s.reservations[0].start_s = 1000 + 1800;
  EXPECT_EQ(build_view(s, context_).view.jobs[1].nodes_allowed, (std::vector<bool>{true, false, true}));
  s.jobs[1].time_limit_s = 1200;
  EXPECT_TRUE(build_view(s, context_).view.jobs[1].nodes_allowed.empty());
  // A job of the reservation starts there and nowhere else.
  s.reservations[0].start_s = 900;
  s.jobs[1].reservations = {"maint"};
  b = build_view(s, context_);
  EXPECT_EQ(b.view.jobs[1].nodes_allowed, (std::vector<bool>{false, true, false}));
  EXPECT_NE(b.view.jobs[0].app, b.view.jobs[1].app);
  EXPECT_EQ(nodes_of_12(b), std::set<std::string>{"a100-2"});
}

// A node of a running Morph job becomes unusable (drained, a reboot requested): the job
// runs on, its GPUs in the view for it alone; no other job is planned there, where Slurm
// starts none. Job 12, guaranteed, with every other GPU taken, used to be planned onto
// a100-1 by shrinking job 11 there, where Slurm would not start it.
TEST_F(DaemonView, ARunningJobOnANodeThatBecameUnusableKeepsItsGpusForItself) {
  ClusterSnapshot s = with_record(12, [](JobRecord& r) {
    r.request.sla = Sla::guaranteed;
    r.request.sla_given = true;
  });
  s.nodes[0].usable = false;
  s.nodes[1].gpus_in_use = 8;  // job 13's and others'
  s.nodes[2].gpus_in_use = 4;
  const BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.nodes.size(), 1u) << "a100-1 alone has GPUs for Morph";
  EXPECT_EQ(b.view.nodes[0].type.gpus, 8);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  const policy::JobState& running = b.view.jobs[0];
  ASSERT_EQ(running.current.slices.size(), 1u);
  EXPECT_EQ(running.current.slices[0].node, 0);
  EXPECT_EQ(running.current.slices[0].gpus, 8);
  EXPECT_TRUE(running.nodes_allowed.empty());
  const policy::JobState& pending = b.view.jobs[1];
  EXPECT_EQ(pending.nodes_allowed, std::vector<bool>{false});
  EXPECT_NE(running.app, pending.app) << "one set of nodes per application";
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  for (const std::string name : {"morphling", "sia"}) {
    for (const policy::Decision& d : policy::make_policy(name)->schedule(b.view, oracle)) {
      EXPECT_EQ(d.target.gpus(), d.job == "11" ? 8 : 0) << name << " job " << d.job;
    }
  }
}

}  // namespace
}  // namespace morph::daemon

namespace morph::daemon {
namespace {

// Job 11 runs on 4 GPUs of a100-1, a node it may only stay on (policy::JobState::nodes_kept):
// after a requeue Slurm would not start it there. With a maintenance reservation that
// began there (job 11 outside it), a100-1's other 4 GPUs are free: morphling grew job 11
// onto all 8 by a requeue, and the job waited for the reservation's end, holding nothing.
// It keeps its 4 now, where it may change its plan in place (the record's plan is not what
// the model now finds best there). Drained, a100-1 keeps it too, and morphd refuses a
// requeue there that a policy might still choose, but not a new plan in place.
TEST_F(DaemonView, AJobIsNeverRequeuedOntoANodeSlurmWouldNotStartItOn) {
  ClusterSnapshot s = with_record(11, [](JobRecord& r) {
    r.current.gpus_per_node = 4;
    r.current.plan = test::make_plan(4, 1, 1, 1, 1, 4);
    r.request.iterations = 1000000;  // long enough for 8 GPUs to pay a requeue back
  });
  s.nodes[0].gpus_in_use = 4;
  SlurmReservation maint{"maint", {"a100-1"}, false, 900, 4600};
  maint.maint = true;
  s.reservations = {maint};
  BuiltView b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  ASSERT_EQ(b.view.jobs[0].id, "11");
  EXPECT_EQ(b.view.jobs[0].nodes_kept, (std::vector<bool>{true, false, false}));  // a100-1, a100-2, v100-1
  EXPECT_TRUE(b.view.jobs[1].nodes_kept.empty()) << "pending, it runs nowhere";
  policy::PlanOracle oracle(b.apps, config_.memory, config_.max_gpus_per_job);
  const auto decisions = policy::make_policy("morphling")->schedule(b.view, oracle);
  const auto eleven = std::find_if(decisions.begin(), decisions.end(), [](const auto& d) { return d.job == "11"; });
  ASSERT_NE(eleven, decisions.end());
  EXPECT_EQ(eleven->target.slices, b.view.jobs[0].current.slices);
  std::vector<std::string> skipped;
  for (const Reconfiguration& r : plan_reconfigurations(b, decisions, oracle, &skipped))
    if (r.job == 11u) {
      EXPECT_EQ(r.path, Path::inplace) << r.reason;
    }

  s.reservations.clear();
  s.nodes[0].usable = false;  // drained
  b = build_view(s, context_);
  ASSERT_EQ(b.view.jobs.size(), 2u) << fmt::format("{}", fmt::join(b.skipped, "; "));
  EXPECT_EQ(b.view.jobs[0].nodes_kept, (std::vector<bool>{true, false, false}));
  oracle = policy::PlanOracle(b.apps, config_.memory, config_.max_gpus_per_job);
  const policy::JobAllocation halved{{{0, 2, 8, 0}}, test::make_plan(2, 1, 1, 1, 1, 8)};
  EXPECT_TRUE(plan_reconfigurations(b, {{"11", halved}}, oracle, &skipped).empty());
  ASSERT_FALSE(skipped.empty());
  EXPECT_NE(skipped.back().find("job 11: not requeued onto a100-1"), std::string::npos) << skipped.back();
  const policy::JobAllocation replanned{{{0, 4, 16, 0}}, test::make_plan(2, 1, 2, 1, 2, 4)};
  const auto inplace = plan_reconfigurations(b, {{"11", replanned}}, oracle, &skipped);
  ASSERT_EQ(inplace.size(), 1u) << skipped.back();
  EXPECT_EQ(inplace[0].path, Path::inplace);
  const policy::JobAllocation moved{{{1, 4, 16, 0}}, b.view.jobs[0].current.plan};
  const auto elsewhere = plan_reconfigurations(b, {{"11", moved}}, oracle, &skipped);
  ASSERT_EQ(elsewhere.size(), 1u) << skipped.back();
  EXPECT_EQ(elsewhere[0].path, Path::requeue);
}

}  // namespace
}  // namespace morph::daemon
