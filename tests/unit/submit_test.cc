// Sizing at submission (libmorph/planner/submit_plan) and the job_submit_morph logic
// without Slurm (plugins/job_submit/submit_handler).
#include "libmorph/planner/submit_plan.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <random>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "libmorph/planner/plan_search.h"
#include "libmorph/request/limits.h"
#include "libmorph/util/error.h"
#include "plugins/job_submit/submit_handler.h"
#include "test_support.h"

namespace morph {
namespace {

std::string cluster_conf() {
  return "GpuType=a100-80g Aliases=a100 MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n"
         "GpuType=v100-32g MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=120 PcieBandwidthGBps=12\n"
         "NodeType=a Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25 Nics=2 Features=ampere,a100-80g\n"
         "NodeType=v Gpu=v100-32g Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25 Nics=1 Features=volta\n"
         "NodeName=a[1-2] NodeType=a\nNodeName=v[1-2] NodeType=v\n"
         "ModelCatalog=" + test::source_dir() + "/share/models.json\n";
}

class Submit : public ::testing::Test {
 protected:
  MorphConfig config = parse_morph_conf(cluster_conf(), "morph.conf");
  Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  PerfStore perf;
  SubmitContext context{config, catalog, perf};

  MorphRequest request(const std::string& model, const std::string& batch) {
    MorphRequest r;
    set_morph_option(r, "model", model);
    set_morph_option(r, "batch", batch);
    return r;
  }
};

TEST_F(Submit, PicksAFeasiblePlanWithTheBestThroughputPerGpu) {
  const SubmitDecision d = decide_submission(context, request("gpt2-1.5b", "64"), std::nullopt);
  ASSERT_TRUE(d.accepted) << d.reason;
  const Placement& p = d.record.current;
  EXPECT_EQ(p.plan.gpus(), p.gpus());
  EXPECT_EQ(p.plan.global_batch(), 64);
  // No other candidate the rule considers does better per GPU.
  const Workload w{*catalog.find("gpt2-1.5b"), 64, 1024};
  const double chosen = 64 / (p.iter_ms / 1e3) / p.gpus();
  for (const NodeType& node : config.cluster.node_types())
    for (int g = 1; g <= node.gpus; ++g) {
      const Allocation a = uniform_allocation(config.cluster, node, 1, g);
      const PlanSearch s = search_plans(w, a, perf.model_for(w.model, 1024, config.cluster.gpu_of(node), 0.4), {});
      if (!s.feasible.empty()) {
        EXPECT_LE(s.feasible.front().throughput / g, chosen * (1 + 1e-9)) << node.name << " " << g;
      }
    }
  EXPECT_NE(d.message.find("gpt2-1.5b batch 64 -> "), std::string::npos);
  EXPECT_EQ(d.record.request.seq_len, 1024);  // the model's default, recorded
}

TEST_F(Submit, HonoursGpuBoundsTypesAndPlanFeatures) {
  MorphRequest r = request("bert-336m", "64");
  set_morph_option(r, "gpus", "2-4");
  set_morph_option(r, "gpu-type", "v100-32g");
  set_morph_option(r, "plans", "dp,zero");
  const SubmitDecision d = decide_submission(context, r, std::nullopt);
  ASSERT_TRUE(d.accepted) << d.reason;
  EXPECT_EQ(d.record.current.gpu_type, "v100-32g");
  EXPECT_GE(d.record.current.gpus(), 2);
  EXPECT_LE(d.record.current.gpus(), 4);
  EXPECT_EQ(d.record.current.plan.tp, 1);
  EXPECT_FALSE(d.record.current.plan.offload);
  set_morph_option(r, "gpu-type", "h100");
  EXPECT_THROW(decide_submission(context, r, std::nullopt), Error);
}

TEST_F(Submit, SeveralNodesAreWholeNodes) {
  MorphRequest r = request("llama-30b", "256");
  set_morph_option(r, "gpus", "16");
  const SubmitDecision d = decide_submission(context, r, std::nullopt);
  ASSERT_TRUE(d.accepted) << d.reason;
  EXPECT_EQ(d.record.current.nodes, 2);
  EXPECT_EQ(d.record.current.gpus_per_node, 8);
}

TEST_F(Submit, AModelThatFitsNowhereIsRefusedWithTheReason) {
  const SubmitDecision d = decide_submission(context, request("gpt3-175b", "64"), std::nullopt);
  EXPECT_FALSE(d.accepted);
  EXPECT_NE(d.reason.find("a100-80g: no plan fits"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("v100-32g: no plan fits"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("out of"), std::string::npos) << d.reason;
}

TEST_F(Submit, GuaranteedJobsNeverGoBelowTheirBaseline) {
  MorphRequest r = request("gpt2-1.5b", "64");
  set_morph_option(r, "sla", "guaranteed");
  set_morph_option(r, "plan", "dp=4");
  const UserGpuRequest user{GpuTres{"a100-80g", 4}, 1};
  const SubmitDecision d = decide_submission(context, r, user);
  ASSERT_TRUE(d.accepted) << d.reason;
  ASSERT_TRUE(d.record.baseline);
  EXPECT_EQ(d.record.baseline->plan.dp, 4);
  EXPECT_EQ(d.record.baseline->gpus(), 4);
  EXPECT_LE(d.record.current.gpus(), 4);
  EXPECT_LE(d.record.current.iter_ms, d.record.baseline->iter_ms);
  set_morph_option(r, "plan", "dp=3");  // 3 does not use 4 GPUs
  EXPECT_FALSE(decide_submission(context, r, user).accepted);
}

// Review of the planner: the search keeps one micro-batch size per variant, the fastest,
// and the baseline was looked for among those only: a --morph-plan naming its
// accumulation steps or micro-batch size was refused when another size ran faster.
TEST_F(Submit, ABaselineNamingItsMicroBatchingIsFoundThoughAnotherIsFaster) {
  MorphRequest r = request("gpt2-1.5b", "64");
  const UserGpuRequest user{GpuTres{"a100-80g", 8}, 1};
  for (const char* plan : {"dp=8,zero=0,ga=8,mbs=1", "dp=8,zero=0,ga=2,mbs=4", "dp=8,zero=0,mbs=2"}) {
    set_morph_option(r, "plan", plan);
    const SubmitDecision d = decide_submission(context, r, user);
    ASSERT_TRUE(d.accepted) << plan << ": " << d.reason;
    ASSERT_TRUE(d.record.baseline);
    const std::string kept = to_string(d.record.baseline->plan);
    for (const std::string& part : {std::string(" zero=0"), std::string(" mbs=") + (std::string(plan).substr(std::string(plan).rfind('=') + 1))})
      EXPECT_NE((" " + kept + " ").find(part + " "), std::string::npos) << plan << " -> " << kept;
  }
}

// A baseline is an allocation of this cluster: more nodes than morph.conf lists of a
// type with the GPUs per node is refused by name, before anything is sized for it.
TEST_F(Submit, ABaselineOfMoreNodesThanTheClusterListsIsRefused) {
  const MorphRequest r = request("gpt2-1.5b", "64");
  EXPECT_TRUE(decide_submission(context, r, UserGpuRequest{GpuTres{"a100-80g", 1}, 2}).accepted);
  const SubmitDecision d = decide_submission(context, r, UserGpuRequest{GpuTres{"a100-80g", 1}, 3});
  EXPECT_FALSE(d.accepted);
  EXPECT_NE(d.reason.find("on 3 nodes (morph.conf lists 2 such nodes)"), std::string::npos) << d.reason;
  // Untyped: the v100 nodes offer 4 GPUs per node too, and there are only 2 of them.
  EXPECT_FALSE(decide_submission(context, r, UserGpuRequest{GpuTres{"", 4}, 10'000'000}).accepted);
}

// The baseline is an allocation Slurm could give the job: on nodes its -x, --constraint
// and --morph-gpu-type leave, of a GPU count within --morph-gpus. A guaranteed job whose
// baseline was on excluded A100s was accepted there as its plan.
TEST_F(Submit, ABaselineKeepsToTheUsersOwnConstraints) {
  MorphRequest r = request("llama2-7b", "16");
  set_morph_option(r, "sla", "guaranteed");
  const UserGpuRequest eight{GpuTres{"", 8}, 1};
  SubmitConstraints x;
  x.excluded_nodes = {"a1"};
  const SubmitDecision kept = decide_submission(context, r, eight, x);  // a2 is left
  ASSERT_TRUE(kept.accepted) << kept.reason;
  EXPECT_EQ(kept.record.baseline->gpu_type, "a100-80g");
  x.excluded_nodes = {"a1", "a2"};
  SubmitDecision d = decide_submission(context, r, eight, x);
  EXPECT_FALSE(d.accepted) << d.message;
  EXPECT_NE(d.reason.find("a: -x/--exclude excludes all its nodes"), std::string::npos) << d.reason;
  SubmitConstraints volta;
  volta.features = "volta";
  d = decide_submission(context, r, eight, volta);
  EXPECT_FALSE(d.accepted) << d.message;
  EXPECT_NE(d.reason.find("a: its nodes lack --constraint=volta"), std::string::npos) << d.reason;
  MorphRequest typed = r;
  set_morph_option(typed, "gpu-type", "v100-32g");
  d = decide_submission(context, typed, eight);
  EXPECT_FALSE(d.accepted) << d.message;
  EXPECT_NE(d.reason.find("a: not among --morph-gpu-type"), std::string::npos) << d.reason;
  for (const char* bounds : {"16", "1-4"}) {
    MorphRequest bounded = r;
    set_morph_option(bounded, "gpus", bounds);
    d = decide_submission(context, bounded, eight);
    EXPECT_FALSE(d.accepted) << bounds << ": " << d.message;
    EXPECT_NE(d.reason.find("the requested 8 GPUs are outside --morph-gpus="), std::string::npos) << d.reason;
  }
}

// A refusal says why no plan was weighed: no plan shape (batch 1 over 2+ GPUs with data
// parallelism alone), or -N's whole nodes beyond --morph-gpus; both said "no plan fits".
TEST_F(Submit, ARefusalNamesAStructuralCauseBeforeMemory) {
  MorphRequest r = request("gpt2-1.5b", "1");
  set_morph_option(r, "plans", "dp,zero");
  set_morph_option(r, "gpus", "2-16");
  SubmitDecision d = decide_submission(context, r, std::nullopt);
  EXPECT_FALSE(d.accepted) << d.message;
  EXPECT_NE(d.reason.find("a100-80g: no GPU count of 2-16 has a plan shape: dp dividing the batch of 1"),
            std::string::npos)
      << d.reason;
  r = request("gpt2-1.5b", "64");
  set_morph_option(r, "gpus", "1-4");
  SubmitConstraints two;
  two.min_nodes = 2;
  d = decide_submission(context, r, std::nullopt, two);
  EXPECT_FALSE(d.accepted) << d.message;
  EXPECT_NE(d.reason.find("a100-80g: 2 whole nodes of 8 GPUs are 16 GPUs, more than the 4 it may have"),
            std::string::npos)
      << d.reason;
}

// -N beyond a type's nodes leaves no plan to weigh there: the reason names -N (it said
// "no plan fits on 1-8 GPUs"), -w's count or the partition's MinNodes, whichever it is.
TEST_F(Submit, AFloorOfMoreNodesThanATypeHasIsNamed) {
  SubmitConstraints c;
  c.min_nodes = 3;
  SubmitDecision d = decide_submission(context, request("gpt2-1.5b", "64"), std::nullopt, c);
  EXPECT_FALSE(d.accepted);
  EXPECT_NE(d.reason.find("a100-80g: 2 usable nodes, fewer than -N 3"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("v100-32g: 2 usable nodes, fewer than -N 3"), std::string::npos) << d.reason;
  c.min_nodes = 2;
  d = decide_submission(context, request("gpt2-1.5b", "64"), std::nullopt, c);
  EXPECT_TRUE(d.accepted) << d.reason;
  EXPECT_EQ(d.record.current.nodes, 2);
}

class Handler : public ::testing::Test {
 protected:
  void SetUp() override {
    conf = ::testing::TempDir() + "/morph-handler.conf";
    std::ofstream(conf) << cluster_conf();
    handler.load(conf, "/nonexistent");
    ASSERT_EQ(handler.load_error(), "");
  }
  std::string conf;
  plugin::SubmitHandler handler;
};

TEST_F(Handler, JobsWithoutMorphOptionsPassThrough) {
  plugin::SubmitInput in;
  in.spank_env = {"SLURM_X=1", "_SLURM_SPANK_OPTION_other_opt=2"};
  in.user.tres_per_node = "gres:gpu:a100-80g:2";
  EXPECT_EQ(handler.submit(in).verdict, plugin::Verdict::pass_through);
}

TEST_F(Handler, SizesMorphJobsIntoASlurmRequest) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=llama2-7b", "MORPH_REQUEST_BATCH=512"};
  const plugin::SubmitOutput out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord r = parse_admin_comment(out.request.admin_comment);
  EXPECT_EQ(out.request.tres_per_node, "gres:gpu:" + r.current.gpu_type + ":" + std::to_string(r.current.gpus_per_node));
  EXPECT_EQ(out.request.nodes, r.current.nodes);
  EXPECT_EQ(out.request.tasks, r.current.gpus());
  EXPECT_EQ(out.request.tasks_per_node, r.current.gpus_per_node);
  EXPECT_EQ(out.request.cpus_per_task, r.current.cpus_per_gpu);
  EXPECT_GT(out.request.memory_mb_per_node, 0u);
  EXPECT_EQ(out.message.rfind("morph: llama2-7b batch 512 -> ", 0), 0u);
  // The same request again comes from the cache and is identical.
  EXPECT_EQ(handler.submit(in).request.admin_comment, out.request.admin_comment);
  // A declared length (--morph-iterations) reaches the record for morphd.
  in.spank_env.push_back("MORPH_REQUEST_ITERATIONS=25000");
  const plugin::SubmitOutput declared = handler.submit(in);
  ASSERT_EQ(declared.verdict, plugin::Verdict::accept) << declared.message;
  EXPECT_EQ(parse_admin_comment(declared.request.admin_comment).request.iterations, 25000);
  in.spank_env.back() = "MORPH_REQUEST_ITERATIONS=many";
  const plugin::SubmitOutput refused = handler.submit(in);
  EXPECT_EQ(refused.verdict, plugin::Verdict::reject);
  EXPECT_NE(refused.message.find("--morph-iterations: 'many' is not an integer"), std::string::npos) << refused.message;
}

TEST_F(Handler, RefusesBadRequestsWithAMessage) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=nosuch", "MORPH_REQUEST_BATCH=8"};
  plugin::SubmitOutput out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("unknown model 'nosuch'"), std::string::npos) << out.message;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2", "MORPH_REQUEST_BATCH=abc"};
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("--morph-batch"), std::string::npos) << out.message;
  // Other GRES with a space would add keys to the job's record past every check.
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2", "MORPH_REQUEST_BATCH=8"};
  in.user.tres_per_node = "gres:shard:2 iterations=7 min_nodes=2";
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("other_gres='gres:shard:2 iterations=7 min_nodes=2' is not a GRES list"), std::string::npos)
      << out.message;
}

TEST_F(Handler, WithoutItsConfigurationMorphJobsAreRefusedOthersPass) {
  plugin::SubmitHandler broken;
  broken.load("/nonexistent/morph.conf", "/nonexistent");
  EXPECT_NE(broken.load_error(), "");
  plugin::SubmitInput morph_job;
  morph_job.spank_env = {"MORPH_REQUEST_MODEL=gpt2", "MORPH_REQUEST_BATCH=8"};
  const plugin::SubmitOutput out = broken.submit(morph_job);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("not configured"), std::string::npos);
  EXPECT_EQ(broken.submit(plugin::SubmitInput{}).verdict, plugin::Verdict::pass_through);
}

TEST_F(Handler, ModifyChecksMorphRecordsAndMakesResourcesFollowThem) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  const std::string record = handler.submit(in).request.admin_comment;
  plugin::ModifyInput update;
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::pass_through);  // no comment
  update.admin_comment = "reviewed by ops";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::pass_through);
  update.admin_comment = "morph:v1 model=gpt2";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
  update.admin_comment = record;
  const plugin::ModifyOutput ok = handler.modify(update);
  ASSERT_EQ(ok.verdict, plugin::Verdict::accept) << ok.message;
  ASSERT_TRUE(ok.request);
  EXPECT_EQ(ok.request->admin_comment, record);
  update.update.tres_per_node = "gres:gpu:a100-80g:7";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
  update.update.tres_per_node.clear();
  update.update.min_nodes = 9;
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
}

// Issue 10, defect 5: the owner changed the GPUs of a pending Morph job with scontrol
// update (no AdminComment in the update); it then ran 8 GPUs with a 1-GPU plan.
TEST_F(Handler, ModifyRefusesResourceUpdatesThatLeaveTheJobsPlan) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  const plugin::SlurmRequest sized = handler.submit(in).request;
  const JobRecord r = parse_admin_comment(sized.admin_comment);
  ASSERT_EQ(r.current.gpus_per_node, 1);
  plugin::ModifyInput update;
  update.current_admin_comment = sized.admin_comment;
  // Each refusal says what was refused (job_submit_morph returns it as Slurm's error code).
  using Change = std::function<void(plugin::JobResources&)>;
  for (const auto& [change, refusal] : std::vector<std::pair<Change, plugin::Refusal>>{
           {[](auto& u) { u.tres_per_node = "gres:gpu:a100-80g:8"; }, plugin::Refusal::gpus},
           {[](auto& u) { u.tres_per_node = "gres:gpu:v100-32g:1"; }, plugin::Refusal::gpus},
           {[](auto& u) { u.tres_per_job = "gres:gpu:4"; }, plugin::Refusal::gpus},
           {[](auto& u) { u.tres_per_task = "gres:gpu:1"; }, plugin::Refusal::gpus},
           {[](auto& u) { u.min_nodes = 2; }, plugin::Refusal::nodes},
           {[](auto& u) { u.tasks = 8; }, plugin::Refusal::tasks},
           {[](auto& u) { u.tasks_per_node = 8; }, plugin::Refusal::tasks},
           {[](auto& u) { u.cpus_per_task = 1; }, plugin::Refusal::cpus},
           {[](auto& u) { u.cpus_per_tres = "gres:gpu:2"; }, plugin::Refusal::cpus}}) {
    update.update = {};
    change(update.update);
    const plugin::ModifyOutput out = handler.modify(update);
    EXPECT_EQ(out.verdict, plugin::Verdict::reject);
    EXPECT_EQ(out.refusal, refusal) << out.message;
    EXPECT_NE(out.message.find("does not match the job's plan (1 node x 1 a100-80g GPUs"), std::string::npos)
        << out.message;
  }
  // What matches the plan, and what does not touch it, passes.
  update.update = {};
  update.update.tres_per_node = "gres:gpu:A100-80G:1";  // the plan's type in capitals
  update.update.min_nodes = 1;
  update.update.tasks = 1;
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::pass_through) << handler.modify(update).message;
  // An alias is no Slurm GRES type of the nodes, and the job's tasks would refuse it.
  update.update.tres_per_node = "gres:gpu:a100:1";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
  update.update = {};
  update.update.features = "a100-80g";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::pass_through);
  // A note must not replace the record a Morph job's tasks read their plan from.
  update.admin_comment = "reviewed by ops";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
  EXPECT_EQ(handler.modify(update).refusal, plugin::Refusal::other);
  update.current_admin_comment = "reviewed earlier";  // not a Morph job
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::pass_through);
}

// Issue 12: a new plan on the same GPUs, or one that gives nodes back, changes only the
// AdminComment, so that it applies to a running job (morphrun --driver restarts in place);
// a plan on other GPUs makes the resources follow.
TEST_F(Handler, ModifyOfARecordOnTheSameGpusSetsOnlyTheRecord) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  const std::string record = handler.submit(in).request.admin_comment;
  JobRecord r = parse_admin_comment(record);
  r.current.nodes = 2;
  r.current.gpus_per_node = 4;
  r.current.plan = ExecutionPlan{.dp = 8, .micro_batch_size = 2};
  const std::string two_nodes = to_admin_comment(r);
  plugin::ModifyInput update;
  update.current_admin_comment = two_nodes;
  r.current.plan = ExecutionPlan{.dp = 4, .tp = 2, .micro_batch_size = 4};  // same 8 GPUs
  update.admin_comment = to_admin_comment(r);
  plugin::ModifyOutput out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_TRUE(out.record_only);
  r.current.nodes = 1;  // a shrink: one node of the two
  r.current.plan = ExecutionPlan{.dp = 4, .micro_batch_size = 4};
  update.admin_comment = to_admin_comment(r);
  out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_TRUE(out.record_only);
  // The same update naming the node count (morphd's, for a pending job): the resources follow.
  update.update.min_nodes = update.update.max_nodes = 1;
  out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_FALSE(out.record_only);
  ASSERT_TRUE(out.request);
  EXPECT_EQ(out.request->nodes, 1);
  update.update = {};
  r = parse_admin_comment(two_nodes);
  r.current.gpus_per_node = 8;  // other GPUs per node: the resources follow
  r.current.nodes = 1;
  update.admin_comment = to_admin_comment(r);
  out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_FALSE(out.record_only);
}

// --mem and --mincpus are the user's floors per node: the record keeps them, so that a
// new plan's request (morphd's update, which names only the record and the node count)
// does not lower them to the model's estimate.
TEST_F(Handler, TheUsersMemAndMincpusFloorEveryLaterPlan) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  in.user.memory_mb_per_node = 200000;
  in.user.min_cpus_per_node = 30;
  const plugin::SubmitOutput submitted = handler.submit(in);
  ASSERT_EQ(submitted.verdict, plugin::Verdict::accept) << submitted.message;
  JobRecord r = parse_admin_comment(submitted.request.admin_comment);
  EXPECT_EQ(r.memory_mb_per_node, 200000);
  EXPECT_EQ(r.min_cpus_per_node, 30);
  EXPECT_NE(submitted.request.admin_comment.find(" mem_mb=200000 min_cpus=30"), std::string::npos)
      << submitted.request.admin_comment;
  plugin::ModifyInput update;
  update.current_admin_comment = submitted.request.admin_comment;
  r.current.nodes = 2;
  r.current.plan.dp *= 2;
  r.current.plan.ga_steps = std::max(1, r.current.plan.ga_steps / 2);
  if (r.current.plan.global_batch() != 16) r.current.plan.micro_batch_size /= 2;
  ASSERT_EQ(r.current.plan.global_batch(), 16) << to_string(r.current.plan);
  update.admin_comment = to_admin_comment(r);
  update.update.min_nodes = update.update.max_nodes = 2;
  const plugin::ModifyOutput out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  ASSERT_TRUE(out.request);
  EXPECT_EQ(out.request->memory_mb_per_node, 200000u);
  EXPECT_GE(out.request->min_cpus_per_node, 30);
  // Floors that changed make the update more than a record: the resources follow.
  update.update = {};
  r = parse_admin_comment(submitted.request.admin_comment);
  r.memory_mb_per_node = 100000;
  update.admin_comment = to_admin_comment(r);
  const plugin::ModifyOutput lower = handler.modify(update);
  ASSERT_EQ(lower.verdict, plugin::Verdict::accept) << lower.message;
  EXPECT_FALSE(lower.record_only);
  EXPECT_EQ(lower.request->memory_mb_per_node, 100000u);
}

// Issue 10, defect 8: records that job_modify accepted but that broke the job.
TEST_F(Handler, ModifyCanonicalisesRecordsAndChecksTheirCounts) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  const std::string record = handler.submit(in).request.admin_comment;
  auto with = [&](const std::string& from, const std::string& to) {
    const std::size_t at = record.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return record.substr(0, at) + to + record.substr(at + from.size());
  };
  plugin::ModifyInput update;
  for (const char* alias : {"type=a100 ", "type=A100-80G "}) {
    update.admin_comment = with("type=a100-80g ", alias);
    const plugin::ModifyOutput out = handler.modify(update);
    ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
    EXPECT_EQ(out.request->tres_per_node, "gres:gpu:a100-80g:1");
    EXPECT_EQ(parse_admin_comment(out.request->admin_comment).current.gpu_type, "a100-80g");
  }
  // The cluster has two a100 nodes: a pipeline over three is refused.
  JobRecord three = parse_admin_comment(record);
  three.current.nodes = 3;
  three.current.plan.pp = 3;
  three.current.plan.zero_stage = 0;
  three.current.plan.micro_batches = three.current.plan.ga_steps;
  three.current.plan.ga_steps = 1;
  update.admin_comment = to_admin_comment(three);
  plugin::ModifyOutput out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("nodes=3 but morph.conf lists 2 nodes"), std::string::npos) << out.message;
  // cpus_per_gpu above the node's CPUs, and above Slurm's 16-bit cpus_per_task.
  for (const char* cpus : {" cpus_per_gpu=33 ", " cpus_per_gpu=65540 ", " cpus_per_gpu=1048576 "}) {
    update.admin_comment = with(" cpus_per_gpu=4 ", cpus);
    out = handler.modify(update);
    EXPECT_EQ(out.verdict, plugin::Verdict::reject) << cpus;
    EXPECT_FALSE(out.request) << cpus;
  }
}

// Issue 15, GpuTypeBy=feature: the GPU type is a node feature beside an untyped GRES, the
// user's --constraint is kept in the record and ANDed with it.
class FeatureHandler : public Handler {
 protected:
  void SetUp() override {
    conf = ::testing::TempDir() + "/morph-handler-feature.conf";
    std::ofstream(conf) << cluster_conf() << "GpuTypeBy=feature\n";
    handler.load(conf, "/nonexistent");
    ASSERT_EQ(handler.load_error(), "");
  }
};

TEST_F(FeatureHandler, TheGpuTypeIsANodeFeatureAndTheUsersConstraintIsKept) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=64"};
  in.user.features = "ampere|volta";
  plugin::SubmitOutput out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord r = parse_admin_comment(out.request.admin_comment);
  EXPECT_EQ(r.constraint, "ampere|volta");
  EXPECT_EQ(out.request.tres_per_node, fmt::format("gres:gpu:{}", r.current.gpus_per_node));
  const std::string feature = r.current.gpu_type == "a100-80g" ? "ampere" : "volta";
  EXPECT_EQ(out.request.features, "(ampere|volta)&" + feature);
  // An update of the record keeps the user's part.
  plugin::ModifyInput update;
  update.current_admin_comment = out.request.admin_comment;
  JobRecord v = r;
  v.current.gpu_type = "v100-32g";
  update.admin_comment = to_admin_comment(v);
  const plugin::ModifyOutput changed = handler.modify(update);
  ASSERT_EQ(changed.verdict, plugin::Verdict::accept) << changed.message;
  EXPECT_EQ(changed.request->features, "(ampere|volta)&volta");
  // The job's owner cannot move it to another GPU type by its Features (the GRES is
  // untyped); the plan's own expression passes.
  plugin::ModifyInput owners;
  owners.current_admin_comment = out.request.admin_comment;
  owners.update.features = feature == "ampere" ? "volta" : "ampere";
  const plugin::ModifyOutput moved = handler.modify(owners);
  EXPECT_EQ(moved.verdict, plugin::Verdict::reject);
  EXPECT_NE(moved.message.find("Features=" + owners.update.features + " does not match the job's plan"),
            std::string::npos)
      << moved.message;
  owners.update.features = "(ampere|volta)&" + feature;
  EXPECT_EQ(handler.modify(owners).verdict, plugin::Verdict::pass_through);
  // Nor by clearing its Features (scontrol update Features=), nor its GPUs by clearing
  // TresPerNode.
  owners.update = {};
  owners.update.clears_features = true;
  const plugin::ModifyOutput cleared = handler.modify(owners);
  EXPECT_EQ(cleared.verdict, plugin::Verdict::reject);
  EXPECT_NE(cleared.message.find("Features= does not match the job's plan"), std::string::npos) << cleared.message;
  owners.update = {};
  owners.update.clears_tres_per_node = true;
  const plugin::ModifyOutput no_gpus = handler.modify(owners);
  EXPECT_EQ(no_gpus.verdict, plugin::Verdict::reject);
  EXPECT_NE(no_gpus.message.find("TresPerNode= (no GPUs) does not match the job's plan"), std::string::npos)
      << no_gpus.message;
  // Without a user constraint, the type's feature alone.
  in.user.features.clear();
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(out.request.features, parse_admin_comment(out.request.admin_comment).current.gpu_type == "a100-80g"
                                      ? "ampere"
                                      : "volta");
  // A node type without Features= cannot be named so.
  std::ofstream(conf) << cluster_conf() << "GpuTypeBy=feature\nNodeType=bare Gpu=a100-80g Gpus=4 Cpus=16 "
                                           "MemoryGiB=64 NetworkBandwidthGBps=25\n";
  plugin::SubmitHandler bare;
  bare.load(conf, "/nonexistent");
  EXPECT_NE(bare.load_error().find("NodeType bare has no Features="), std::string::npos)
      << bare.load_error();
}

// A heterogeneous record needs the feature form: Slurm 22.05 refuses to turn a typed GPU
// request into an untyped one.
TEST_F(Handler, AHeterogeneousRecordNeedsGpuTypeByFeature) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=64"};
  JobRecord r = parse_admin_comment(handler.submit(in).request.admin_comment);
  r.current.gpu_type.clear();
  r.current.nodes = 2;
  r.current.gpus_per_node = 4;
  r.current.plan = ExecutionPlan{.dp = 8, .micro_batch_size = 2};
  r.current.groups = {{"a100-80g", 1, 1, 6}, {"v100-32g", 1, 1, 2}};
  plugin::ModifyInput update;
  update.admin_comment = to_admin_comment(r);
  const plugin::ModifyOutput out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("needs GpuTypeBy=feature"), std::string::npos) << out.message;
}

// Issue 15: a heterogeneous record asks Slurm for an untyped GRES and a count constraint
// on the node features; going back to one type gives the type's feature again.
TEST_F(FeatureHandler, ModifyToAHeterogeneousRecordSetsAnUntypedGresAndACountConstraint) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=64"};
  const std::string homogeneous = handler.submit(in).request.admin_comment;
  JobRecord r = parse_admin_comment(homogeneous);
  r.current.gpu_type.clear();
  r.current.nodes = 2;
  r.current.gpus_per_node = 4;
  r.current.plan = ExecutionPlan{.dp = 8, .micro_batch_size = 2};
  r.current.groups = {{"a100", 1, 1, 6}, {"v100-32g", 1, 1, 2}};  // 4*12 + 4*4 = 64
  plugin::ModifyInput update;
  update.current_admin_comment = homogeneous;
  update.admin_comment = to_admin_comment(r);
  plugin::ModifyOutput out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_FALSE(out.record_only);
  ASSERT_TRUE(out.request);
  EXPECT_EQ(out.request->tres_per_node, "gres:gpu:4");
  EXPECT_EQ(out.request->features, "[ampere*1&volta*1]");  // each type's first node feature
  EXPECT_EQ(out.request->nodes, 2);
  EXPECT_EQ(out.request->tasks, 8);
  const JobRecord written = parse_admin_comment(out.request->admin_comment);
  EXPECT_EQ(written.current.groups[0].gpu_type, "a100-80g");  // canonical
  // Other GA on the same nodes: the record alone changes.
  const std::string hetero = out.request->admin_comment;
  update.current_admin_comment = hetero;
  r.current.groups = {{"a100-80g", 1, 2, 3}, {"v100-32g", 1, 1, 2}};
  update.admin_comment = to_admin_comment(r);
  out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_TRUE(out.record_only);
  // Back to one type: the constraint goes.
  update.admin_comment = homogeneous;
  out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  ASSERT_TRUE(out.request);
  EXPECT_EQ(out.request->features, "ampere");
  EXPECT_EQ(out.request->tres_per_node, fmt::format("gres:gpu:{}", parse_admin_comment(homogeneous).current.gpus_per_node));
  // Three v100 nodes do not exist; a typed GRES update does not match the groups.
  update.current_admin_comment = hetero;
  r.current.nodes = 4;
  r.current.plan.dp = 16;
  r.current.plan.micro_batch_size = 1;
  r.current.groups = {{"a100-80g", 1, 1, 7}, {"v100-32g", 3, 1, 3}};  // 4*7 + 12*3 = 64
  update.admin_comment = to_admin_comment(r);
  out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("groups v100-32g nodes=3 but morph.conf lists 2 nodes"), std::string::npos) << out.message;
  update.admin_comment.reset();
  update.update.tres_per_node = "gres:gpu:a100-80g:4";
  out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("TresPerNode=gres:gpu:a100-80g:4 does not match"), std::string::npos) << out.message;
  // slurmctld logs the refusal: a user's newline forged a log line of its own.
  update.update.tres_per_node = "gres:gpu:a100-80g:2,gres:x\n[2026-12-05T12:00:00.000] error: FORGED";
  out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_EQ(out.message.find('\n'), std::string::npos) << out.message;
  EXPECT_NE(out.message.find("TresPerNode='gres:gpu:a100-80g:2,gres:x?[2026-12-05T"), std::string::npos) << out.message;
  // The user's constraint and a count constraint do not mix.
  JobRecord constrained = parse_admin_comment(hetero);
  constrained.constraint = "ampere";
  update.update = {};
  update.admin_comment = to_admin_comment(constrained);
  out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("cannot be combined with the job's --constraint 'ampere'"), std::string::npos) << out.message;
}

TEST_F(Submit, AJobIsPlannedOnlyForWhatItsFrameworkRuns) {
  // LLaMA-2-7B on two A100s: DeepSpeed's best plan shards gradients and weights (ZeRO-3);
  // Megatron-LM, the default framework, runs ZeRO-1 at most and cannot offload, and its
  // launch would refuse anything else (share/frameworks/megatron.json).
  MorphRequest r = request("llama2-7b", "64");
  set_morph_option(r, "gpus", "2-2");
  set_morph_option(r, "gpu-type", "a100-80g");
  set_morph_option(r, "framework", "deepspeed");
  const SubmitDecision deepspeed = decide_submission(context, r, std::nullopt);
  ASSERT_TRUE(deepspeed.accepted) << deepspeed.reason;
  EXPECT_TRUE(deepspeed.record.current.plan.zero_stage >= 2 || deepspeed.record.current.plan.offload)
      << to_string(deepspeed.record.current.plan);
  set_morph_option(r, "framework", "megatron");
  const SubmitDecision megatron = decide_submission(context, r, std::nullopt);
  ASSERT_TRUE(megatron.accepted) << megatron.reason;
  const ExecutionPlan& plan = megatron.record.current.plan;
  EXPECT_LE(plan.zero_stage, 1) << to_string(plan);
  EXPECT_FALSE(plan.offload) << to_string(plan);
  EXPECT_EQ(plan.gpus(), 2);
}

// Review of the plugins: job_submit_morph wrote min_cpus as the int product tasks x
// cpus_per_task, which overflows past INT_MAX though validate() lets it reach 2^32 - 3.
TEST(SlurmRequest, TheMinimumCpuCountIsComputedPastIntMax) {
  plugin::SlurmRequest s;
  s.nodes = s.tasks_per_node = s.min_cpus_per_node = 1;
  s.tasks = 65536;
  s.cpus_per_task = 65533;
  ASSERT_NO_THROW(s.validate());
  EXPECT_EQ(s.min_cpus(), 4294770688u);
}

TEST(SlurmRequest, EveryCountMustFitItsJobDescField) {
  plugin::SlurmRequest s;
  s.nodes = s.tasks = s.tasks_per_node = s.cpus_per_task = s.min_cpus_per_node = 1;
  EXPECT_NO_THROW(s.validate());
  s.cpus_per_task = 65540;  // 16 bits: it would have become 4
  EXPECT_THROW(s.validate(), Error);
  s.cpus_per_task = 0;
  EXPECT_THROW(s.validate(), Error);
  s.cpus_per_task = 1;
  s.tasks_per_node = 0xfffe;  // NO_VAL16
  EXPECT_THROW(s.validate(), Error);
}

// Issue 10, defect 7: options that survived sizing made jobs unschedulable or were
// ignored; each is now honoured or refused with a message.
TEST_F(Handler, UserOptionsAreHonouredBySizingOrRefused) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  auto sized = [&](const std::function<void(plugin::JobResources&)>& set) {
    in.user = {};
    set(in.user);
    return handler.submit(in);
  };
  // -c 20 (MinCPUsNode 20 too): only a100 nodes (32 CPUs) can hold 20 CPUs per GPU.
  plugin::SubmitOutput out = sized([](auto& u) { u.cpus_per_task = 20; u.min_cpus_per_node = 20; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  JobRecord r = parse_admin_comment(out.request.admin_comment);
  EXPECT_EQ(r.current.gpu_type, "a100-80g");
  EXPECT_EQ(r.current.cpus_per_gpu, 20);
  EXPECT_EQ(out.request.cpus_per_task, 20);
  EXPECT_LE(out.request.min_cpus_per_node, 32);
  EXPECT_GE(out.request.min_cpus_per_node, 20);
  // --mincpus=64: no node has 64 CPUs.
  out = sized([](auto& u) { u.min_cpus_per_node = 64; });
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("fewer than --mincpus=64"), std::string::npos) << out.message;
  // -N beside --gres is the baseline's node count: huge ones are refused, naming -N,
  // without sizing an allocation of that many nodes in slurmctld.
  out = sized([](auto& u) { u.tres_per_node = "gres:gpu:a100-80g:1"; u.min_nodes = 60'000; });
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("on 60000 nodes (morph.conf lists 2 such nodes)"), std::string::npos) << out.message;
  out = sized([](auto& u) { u.tres_per_node = "gres:gpu:1"; u.min_nodes = 3'000'000'000u; });
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("-N 3000000000: more than the 65536 nodes"), std::string::npos) << out.message;
  // -w v100-1 and --constraint pick the GPU type, and the record keeps the job on the
  // types they leave (morphd moves it only among those).
  const std::vector<std::string> any, v100{"v100-32g"};
  out = sized([](auto&) {});
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).request.gpu_types, any);
  out = sized([](auto& u) { u.required_nodes = "v1"; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.gpu_type, "v100-32g");
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).request.gpu_types, v100);
  out = sized([](auto& u) { u.features = "volta"; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.gpu_type, "v100-32g");
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).request.gpu_types, v100);
  out = sized([](auto& u) { u.features = "volta|ampere"; });
  EXPECT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).request.gpu_types, any);
  out = sized([](auto& u) { u.features = "[volta*2]"; });
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("--constraint"), std::string::npos) << out.message;
  out = sized([](auto& u) { u.excluded_nodes = "a[1-2]"; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.gpu_type, "v100-32g");
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).request.gpu_types, v100);
  out = sized([](auto& u) { u.excluded_nodes = "a1"; });  // a2 is left
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).request.gpu_types, any);
  out = sized([](auto& u) { u.required_nodes = "nosuch"; });
  EXPECT_NE(out.message.find("-w/--nodelist: node 'nosuch' is not in morph.conf"), std::string::npos) << out.message;
  // A node named twice is one node (the lists are sorted and deduplicated: 65,536 -w names
  // against 65,536 -x names stalled slurmctld for seconds in a security review).
  out = sized([](auto& u) { u.required_nodes = "v1,v1,v1"; u.excluded_nodes = "a1,a1"; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(out.request.nodes, 1);
  // A user's string is bounded before any work: slurmctld holds its locks meanwhile.
  for (auto set : std::vector<void (*)(plugin::JobResources&)>{
           [](auto& u) { u.excluded_nodes = "a1," + std::string(70000, 'x'); },
           [](auto& u) { u.features = std::string(70000, 'f'); },
           [](auto& u) { u.tres_per_node = "gres:shard:1," + std::string(70000, 'g'); }}) {
    out = sized(set);
    EXPECT_EQ(out.verdict, plugin::Verdict::reject);
    EXPECT_NE(out.message.find("bytes, more than 65536"), std::string::npos) << out.message;
  }
  // -N 2 without --gres: two whole nodes, and the record keeps the bounds for morphd.
  out = sized([](auto& u) { u.min_nodes = 2; u.max_nodes = 2; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(out.request.nodes, 2);
  EXPECT_NE(out.request.admin_comment.find(" min_nodes=2 max_nodes=2"), std::string::npos) << out.request.admin_comment;
  // With --gres, -N is the SLA baseline's node count, not a bound.
  out = sized([](auto& u) { u.tres_per_node = "gres:gpu:a100-80g:1"; u.min_nodes = 2; u.max_nodes = 2; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(out.request.admin_comment.find(" min_nodes="), std::string::npos) << out.request.admin_comment;
  EXPECT_EQ(out.request.admin_comment.find(" max_nodes="), std::string::npos) << out.request.admin_comment;
  // With --gres, -c must fit the SLA baseline's node type too (8 x 8 CPUs on 32): refused
  // at submission, not with a record job_modify would refuse.
  out = sized([](auto& u) { u.tres_per_node = "gres:gpu:a100-80g:8"; u.cpus_per_task = 8; });
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("no node type offers 8 GPUs of type a100-80g per node with 8 CPUs each on 1 nodes"),
            std::string::npos)
      << out.message;
  out = sized([](auto& u) { u.tres_per_node = "gres:gpu:a100-80g:4"; u.cpus_per_task = 8; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  plugin::ModifyInput same;
  same.current_admin_comment = same.admin_comment = out.request.admin_comment;
  EXPECT_EQ(handler.modify(same).verdict, plugin::Verdict::accept) << handler.modify(same).message;
  // --cpus-per-gpu=2 becomes CPUs per task; CpusPerTres does not stay beside it.
  out = sized([](auto& u) { u.cpus_per_tres = "gres:gpu:2"; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(out.request.cpus_per_task, 2);
  // --mem larger than the plan needs is kept.
  out = sized([](auto& u) { u.memory_mb_per_node = 200000; });
  EXPECT_EQ(out.request.memory_mb_per_node, 200000u);
  // Other GRES are kept next to the GPUs, per node and per job.
  out = sized([](auto& u) { u.tres_per_node = "gres:shard:2"; u.tres_per_job = "gres:nvme:1"; });
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(out.request.tres_per_node.substr(0, 9), "gres:gpu:");
  EXPECT_NE(out.request.tres_per_node.find(",gres:shard:2"), std::string::npos) << out.request.tres_per_node;
  EXPECT_EQ(out.request.tres_per_job, "gres:nvme:1");
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).other_gres, "gres:shard:2");
  // What Morph decides itself is refused, naming the flag.
  for (auto [set, flag] : std::vector<std::pair<std::function<void(plugin::JobResources&)>, std::string>>{
           {[](auto& u) { u.tasks = 4; }, "-n/--ntasks"},
           {[](auto& u) { u.tasks_per_node = 4; }, "--ntasks-per-node"},
           {[](auto& u) { u.tasks_per_gpu = 1; }, "--ntasks-per-gpu"},
           {[](auto& u) { u.tres_per_task = "gres:gpu:1"; }, "--gpus-per-task"},
           {[](auto& u) { u.memory_per_cpu = true; u.memory_mb_per_node = 100; }, "--mem-per-cpu"},
           {[](auto& u) { u.cpus_per_task = 3; u.cpus_per_tres = "gres:gpu:2"; }, "disagree"}}) {
    out = sized(set);
    EXPECT_EQ(out.verdict, plugin::Verdict::reject) << flag;
    EXPECT_NE(out.message.find(flag), std::string::npos) << out.message;
  }
}

// Issue 10, defect 1: the planner wrote ga or mbs above 2^20 (batch 2^30 on gpt2-1.5b;
// batch 2^20+1 on a one-layer model), which the tasks' parser refused: the node was
// drained and the job reported COMPLETED 0:0. Now the job is refused at submission or
// sized within the limits, and every record written reads back as itself.
// A node type without NodeName lines (etc/morph.conf defines many) is no candidate, and
// says why, whether partitions are known or not. With them unknown this read an empty
// optional: slurmctld crashed on the submission (review of 2026-12-03).
// A batch of many divisors (2^6 3^3 5^2 7 11 13 17) makes nearly every node count of a
// large cluster a candidate: sizing searches the 64 smallest of each type and says so; a
// batch of few divisors searches all of its own.
TEST(SubmitCounts, ABatchOfManyDivisorsIsSizedAmongTheSmallestCounts) {
  const MorphConfig config = parse_morph_conf(
      "GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n"
      "NodeType=dgx Gpu=a100-80g Gpus=8 Cpus=128 MemoryGiB=2048 NetworkBandwidthGBps=100 Nics=8\n"
      "NodeName=a[1-400] NodeType=dgx\nMaxGpusPerJob=3200\n",
      "morph.conf");
  const Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  const PerfStore perf;
  const Workload w{*catalog.find("llama2-7b"), 735134400, 4096};
  std::vector<int> counts;  // the GPU counts with a plan shape, smallest first
  for (int g = 1; g <= 8; ++g)
    if (any_valid_shape(w, g, g, kAllFeatures)) counts.push_back(g);
  for (int n = 2; n <= 400; ++n)
    if (any_valid_shape(w, 8 * n, 8, kAllFeatures)) counts.push_back(8 * n);
  ASSERT_GT(counts.size(), static_cast<std::size_t>(kMaxGpuCountsWeighed));

  MorphRequest r;
  set_morph_option(r, "model", "llama2-7b");
  set_morph_option(r, "batch", "735134400");
  SubmitDecision d = decide_submission(SubmitContext{config, catalog, perf}, r, std::nullopt);
  ASSERT_TRUE(d.accepted) << d.reason;
  EXPECT_TRUE(d.counts_capped);
  EXPECT_EQ(d.gpu_counts_weighed, kMaxGpuCountsWeighed);
  EXPECT_LE(d.record.current.gpus(), counts[kMaxGpuCountsWeighed - 1]);
  EXPECT_NE(d.message.find("s/iteration; sized among the 64 smallest GPU counts of each type)"), std::string::npos)
      << d.message;

  set_morph_option(r, "batch", "512");
  d = decide_submission(SubmitContext{config, catalog, perf}, r, std::nullopt);
  ASSERT_TRUE(d.accepted) << d.reason;
  EXPECT_FALSE(d.counts_capped);
  EXPECT_LT(d.gpu_counts_weighed, kMaxGpuCountsWeighed);
  EXPECT_EQ(d.message.find("sized among"), std::string::npos) << d.message;
}

TEST(SubmitNodes, ANodeTypeWithoutNodesIsNoCandidate) {
  const MorphConfig config = parse_morph_conf(
      cluster_conf() + "NodeType=spare Gpu=v100-32g Gpus=8 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25 Nics=1\n",
      "morph.conf");
  std::map<std::string, std::string> why_not;
  SubmitConstraints c;
  std::map<std::string, int> usable = usable_nodes(config.cluster, c, &why_not);
  EXPECT_EQ(usable.count("spare"), 0u);
  EXPECT_EQ(why_not["spare"], "morph.conf lists none of its nodes");
  EXPECT_EQ(usable["a"], 2);
  why_not.clear();
  c.partitions = PartitionBounds{"old", false, {"v1", "v2"}, 1, 0};
  usable = usable_nodes(config.cluster, c, &why_not);
  EXPECT_EQ(why_not["spare"], "morph.conf lists none of its nodes");
  EXPECT_EQ(why_not["a"], "partition old has none of its nodes");
  EXPECT_EQ(usable["v"], 2);
}

// Writes cluster_conf() and the slurm.conf lines `partitions` as morph-NAME.conf and
// slurm-NAME.conf in the test's temporary folder and loads `handler` from them; returns
// the folder.
std::string load_with_partitions(plugin::SubmitHandler& handler, const std::string& name,
                                 const std::string& partitions) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/morph-" + name + ".conf") << cluster_conf();
  std::ofstream(dir + "/slurm-" + name + ".conf") << partitions;
  handler.load(dir + "/morph-" + name + ".conf", "/nonexistent", dir + "/slurm-" + name + ".conf");
  return dir;
}

// -p left,right: Slurm runs the job in one of the two, so it has at most the nodes of a
// type that one of them holds. Before, it was sized over their union: 2 A100 nodes, which
// neither partition has, and the job waited for ever.
TEST(HandlerPartitions, AJobOfSeveralPartitionsIsSizedOnTheNodesOfOne) {
  plugin::SubmitHandler handler;
  const std::string dir = load_with_partitions(handler, "union",
                                               "PartitionName=gpu Nodes=ALL Default=YES\n"
                                               "PartitionName=left Nodes=a1,v1\n"
                                               "PartitionName=right Nodes=a2,v2\n");
  ASSERT_EQ(handler.load_error(), "");
  std::map<std::string, std::string> why_not;
  SubmitConstraints c;
  c.partitions = partition_bounds(read_slurm_partitions(dir + "/slurm-union.conf"), "left,right");
  const MorphConfig config = parse_morph_conf(cluster_conf(), "morph.conf");
  EXPECT_EQ(usable_nodes(config.cluster, c, &why_not), (std::map<std::string, int>{{"a", 1}, {"v", 1}}));
  c.excluded_nodes = {"a1"};
  EXPECT_EQ(usable_nodes(config.cluster, c, &why_not), (std::map<std::string, int>{{"a", 1}, {"v", 1}}));
  c.partitions = partition_bounds(read_slurm_partitions(dir + "/slurm-union.conf"), "left,gpu");
  EXPECT_EQ(usable_nodes(config.cluster, c, &why_not), (std::map<std::string, int>{{"a", 1}, {"v", 2}}));

  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=llama2-7b", "MORPH_REQUEST_BATCH=512"};
  plugin::SubmitOutput out = handler.submit(in);  // the default partition: both A100 nodes
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.nodes, 2);
  in.user.partition = "left,right";
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord r = parse_admin_comment(out.request.admin_comment);
  EXPECT_EQ(r.current.gpu_type, "a100-80g");
  EXPECT_EQ(r.current.nodes, 1);
  // A user's own two nodes of A100s (an SLA baseline): neither partition has them.
  in.spank_env.push_back("MORPH_REQUEST_SLA=guaranteed");
  in.user.tres_per_node = "gres:gpu:a100-80g:8";
  in.user.min_nodes = in.user.max_nodes = 2;
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("(partition left,right has 1 such nodes)"), std::string::npos) << out.message;
}

// -p: a job is sized on its partition's nodes within its MaxNodes, and morphd is told
// both (the record's GPU types and max_nodes). Before, a job of a V100 partition was
// planned on A100s and slurmctld refused it ("Requested node configuration is not
// available").
TEST(HandlerPartitions, AJobIsSizedOnItsPartitionsNodes) {
  plugin::SubmitHandler handler;
  const std::string dir = load_with_partitions(handler, "parts",
                                               "PartitionName=gpu Nodes=ALL Default=YES\n"
                                               "PartitionName=old Nodes=v[1-2] MaxNodes=1\n"
                                               "PartitionName=cpu Nodes=c[1-4]\n"
                                               "PartitionName=volta Nodes=v[1-2]\n");
  ASSERT_EQ(handler.load_error(), "");
  ASSERT_EQ(handler.partitions_error(), "");
  EXPECT_EQ(handler.partitions(), 4u);
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=32"};
  plugin::SubmitOutput out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.gpu_type, "a100-80g");
  in.user.partition = "old";
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord r = parse_admin_comment(out.request.admin_comment);
  EXPECT_EQ(r.current.gpu_type, "v100-32g");
  EXPECT_EQ(r.current.nodes, 1);
  EXPECT_EQ(r.request.gpu_types, std::vector<std::string>{"v100-32g"});
  EXPECT_EQ(r.max_nodes, 1);
  const std::string v100_job = out.request.admin_comment;
  // A model that needs more than one V100 node is refused, saying why per type.
  in.spank_env = {"MORPH_REQUEST_MODEL=llama2-7b", "MORPH_REQUEST_BATCH=512", "MORPH_REQUEST_GPUS=8"};
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("a100-80g: partition old has none of its nodes"), std::string::npos) << out.message;
  EXPECT_NE(out.message.find("at most 4 GPUs (1 node of 4)"), std::string::npos) << out.message;
  // Partition= on a Morph job: only to partitions that offer every GPU type and node
  // count its plans may take (morphd keeps it within its record).
  plugin::ModifyInput move;
  move.current_admin_comment = v100_job;
  move.update.partition = "gpu";
  EXPECT_EQ(handler.modify(move).verdict, plugin::Verdict::pass_through) << handler.modify(move).message;
  plugin::SubmitInput anywhere;
  anywhere.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=32"};
  move.current_admin_comment = handler.submit(anywhere).request.admin_comment;
  move.update.partition = "old";
  plugin::ModifyOutput moved = handler.modify(move);
  EXPECT_EQ(moved.verdict, plugin::Verdict::reject);
  EXPECT_NE(moved.message.find("Partition=old: partition old has no a100-80g node, a GPU type the job's plans may use"),
            std::string::npos) << moved.message;
  EXPECT_EQ(moved.refusal, plugin::Refusal::partition);
  move.update.partition = "gpu";
  EXPECT_EQ(handler.modify(move).verdict, plugin::Verdict::pass_through);
  // --morph-gpu-type by an alias or in capitals: the record names morph.conf's type, and
  // Partition= is checked against it as against the type's own name.
  for (const char* spelling : {"a100", "A100"}) {
    plugin::SubmitInput typed;
    const std::string type = fmt::format("MORPH_REQUEST_GPU_TYPE={}", spelling);  // spank_env holds views
    typed.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=32", type};
    const plugin::SubmitOutput sized = handler.submit(typed);
    ASSERT_EQ(sized.verdict, plugin::Verdict::accept) << sized.message;
    EXPECT_EQ(parse_admin_comment(sized.request.admin_comment).request.gpu_types, std::vector<std::string>{"a100-80g"})
        << sized.request.admin_comment;
    move.current_admin_comment = sized.request.admin_comment;
    move.update.partition = "volta";
    moved = handler.modify(move);
    EXPECT_EQ(moved.verdict, plugin::Verdict::reject) << spelling;
    EXPECT_NE(moved.message.find("partition volta has no a100-80g node"), std::string::npos) << moved.message;
    // A record written before the names were made canonical.
    JobRecord old_record = parse_admin_comment(sized.request.admin_comment);
    old_record.request.gpu_types = {spelling};
    move.current_admin_comment = to_admin_comment(old_record);
    EXPECT_EQ(handler.modify(move).verdict, plugin::Verdict::reject) << spelling;
  }
  move.current_admin_comment = handler.submit(anywhere).request.admin_comment;
  anywhere.user.partition = "volta";  // V100s only, any node count
  move.current_admin_comment = handler.submit(anywhere).request.admin_comment;
  move.update.partition = "old";
  moved = handler.modify(move);
  EXPECT_EQ(moved.verdict, plugin::Verdict::reject);
  EXPECT_NE(moved.message.find("partition old allows 1 node per job, the job's plans up to any number"),
            std::string::npos) << moved.message;
  // A partition without GPU nodes of morph.conf; -w outside the partition.
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=32"};
  in.user.partition = "cpu";
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("v100-32g: partition cpu has none of its nodes"), std::string::npos) << out.message;
  in.user.partition = "old";
  in.user.required_nodes = "a1";
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("node 'a1' is not in partition old"), std::string::npos) << out.message;
  // An SLA baseline (--gres, -N) beyond the partition's MaxNodes is refused at once,
  // naming the partition, where the record used to fail its own check.
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=32", "MORPH_REQUEST_SLA=guaranteed"};
  in.user = {};
  in.user.partition = "old";
  in.user.tres_per_node = "gres:gpu:v100-32g:4";
  in.user.min_nodes = in.user.max_nodes = 2;
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("the requested 2 nodes are outside partition old's 1-1 nodes per job"), std::string::npos)
      << out.message;
  // A partition slurm.conf does not name (created since): sized as without -p.
  in.user = {};
  in.user.partition = "new";
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.gpu_type, "a100-80g");
  // An unreadable slurm.conf: every node, and the reason kept for slurmctld's log.
  handler.load(dir + "/morph-parts.conf", "/nonexistent", dir + "/no-such-slurm.conf");
  EXPECT_EQ(handler.load_error(), "");
  EXPECT_NE(handler.partitions_error().find("no-such-slurm.conf"), std::string::npos) << handler.partitions_error();
  in.user.partition = "old";
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.gpu_type, "a100-80g");
}

// job_submit_morph reads its files again when slurmctld's configuration stamp moves, or
// once from a later second when it loaded them in the stamp's own second (a reconfigure
// later in that second keeps the stamp); a clock set back does not make it reload on.
TEST(HandlerReload, IsDueWhenSlurmctldsConfigurationChanged) {
  EXPECT_FALSE(plugin::reload_due(100, 100, 105, 110));  // loaded after the stamp's second
  EXPECT_TRUE(plugin::reload_due(120, 100, 105, 110));   // scontrol reconfigure since
  EXPECT_FALSE(plugin::reload_due(100, 100, 100, 100));  // loaded in the stamp's second, still in it
  EXPECT_TRUE(plugin::reload_due(100, 100, 100, 101));   // ... and seen from the next one
  EXPECT_FALSE(plugin::reload_due(100, 100, 90, 95));    // the clock set back after the stamp
}

// A configuration read again replaces the one in use unless it fails where that one
// loaded: an edit in progress does not turn Morph jobs away, and a fix is taken.
TEST(HandlerReload, KeepsWhatLoadedWhenTheNewFilesFail) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/reload-good.conf") << cluster_conf();
  std::ofstream(dir + "/reload-bad.conf") << cluster_conf() << "NodeName=broken\n";
  std::ofstream(dir + "/reload-slurm.conf") << "PartitionName=gpu Nodes=ALL Default=YES\n";
  std::ofstream(dir + "/reload-slurm-bad.conf") << "PartitionName=gpu Nodes=ALL MaxNodes=many\n";
  auto loaded = [&](const std::string& conf, const std::string& slurm) {
    plugin::SubmitHandler h;
    h.load(dir + "/" + conf, "/nonexistent", dir + "/" + slurm);
    return h;
  };
  const plugin::SubmitHandler good = loaded("reload-good.conf", "reload-slurm.conf");
  const plugin::SubmitHandler bad_conf = loaded("reload-bad.conf", "reload-slurm.conf");
  const plugin::SubmitHandler bad_slurm = loaded("reload-good.conf", "reload-slurm-bad.conf");
  const plugin::SubmitHandler both_bad = loaded("reload-bad.conf", "reload-slurm-bad.conf");
  ASSERT_EQ(good.load_error(), "");
  ASSERT_EQ(good.partitions_error(), "");
  ASSERT_NE(bad_conf.load_error(), "");
  ASSERT_NE(bad_slurm.partitions_error(), "");
  std::string why;
  EXPECT_TRUE(plugin::takes_over(good, good, &why));
  EXPECT_FALSE(plugin::takes_over(bad_conf, good, &why));
  EXPECT_NE(why.find("broken"), std::string::npos) << why;
  EXPECT_FALSE(plugin::takes_over(bad_slurm, good, &why));
  EXPECT_NE(why.find("MaxNodes"), std::string::npos) << why;
  // What refused every Morph job gives way to anything: a fixed morph.conf is taken even
  // where slurm.conf now fails, and so is a new failure.
  EXPECT_TRUE(plugin::takes_over(bad_slurm, bad_conf, &why));
  EXPECT_TRUE(plugin::takes_over(both_bad, bad_conf, &why));
  // Partitions that failed before and fail again: the new morph.conf is taken.
  EXPECT_TRUE(plugin::takes_over(bad_slurm, bad_slurm, &why));
}

TEST_F(Handler, RecordsTheWriterAcceptsTheReaderAccepts) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=1073741824"};
  plugin::SubmitOutput out = handler.submit(in);
  if (out.verdict == plugin::Verdict::accept) EXPECT_NO_THROW(parse_admin_comment(out.request.admin_comment));
  else EXPECT_NE(out.message.find("at most 1048576 accumulation steps"), std::string::npos) << out.message;
  in.spank_env = {"MORPH_REQUEST_MODEL=layers=1,hidden=1,heads=1,seq=1", "MORPH_REQUEST_BATCH=1048577"};
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord r = parse_admin_comment(out.request.admin_comment);
  EXPECT_LE(r.current.plan.micro_batch_size, 1 << 20);
  EXPECT_LE(r.current.plan.ga_steps, 1 << 20);
  EXPECT_EQ(r.current.plan.global_batch(), 1048577);
}

// Acceptance: for plans the planner produces for batches and models across the
// documented ranges, the record round-trips (write -> parse -> equal).
TEST_F(Submit, EveryRecordThePlannerWritesRoundTrips) {
  std::mt19937_64 random(20261123);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(random);
  };
  auto log_uniform = [&](std::int64_t hi) {
    return static_cast<std::int64_t>(std::exp(std::uniform_real_distribution<double>(0, std::log(double(hi)))(random)));
  };
  const std::vector<std::string> names = {"gpt2-1.5b", "bert-336m", "llama2-7b", "t5-1.2b", "vit-86m", "llama-30b"};
  int accepted = 0;
  for (int i = 0; i < 150; ++i) {
    std::string model;
    if (i % 3 == 0) {
      const std::int64_t heads = std::int64_t{1} << pick(0, 6);
      model = fmt::format("layers={},hidden={},heads={},seq={},vocab={}", pick(1, 96), heads * pick(1, 128), heads,
                          log_uniform(MORPH_MAX_SEQ / 64) + 1, pick(0, 100000));
    } else {
      model = names[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(names.size()) - 1))];
    }
    MorphRequest r;
    try {
      set_morph_option(r, "model", model);
      set_morph_option(r, "batch", std::to_string(std::max<std::int64_t>(1, log_uniform(MORPH_MAX_BATCH))));
      if (pick(0, 3) == 0) set_morph_option(r, "plans", pick(0, 1) ? "dp,zero,gc" : "3d,offload");
      if (pick(0, 3) == 0) set_morph_option(r, "gpus", std::to_string(pick(1, 16)) + "-" + std::to_string(pick(16, 64)));
    } catch (const Error&) {
      continue;
    }
    SubmitDecision d;
    try {
      d = decide_submission(context, r, std::nullopt);
    } catch (const Error&) {
      continue;  // e.g. a model the catalog refuses
    }
    if (!d.accepted) continue;
    ++accepted;
    const std::string text = to_admin_comment(d.record);
    JobRecord back;
    ASSERT_NO_THROW(back = parse_admin_comment(text)) << text;
    EXPECT_EQ(to_admin_comment(back), text);
    EXPECT_EQ(back.current.plan, d.record.current.plan) << text;
    EXPECT_EQ(back.request, d.record.request) << text;
    EXPECT_NEAR(back.current.iter_ms, d.record.current.iter_ms, 5e-4 + 1e-9 * d.record.current.iter_ms) << text;
  }
  EXPECT_GT(accepted, 40);
}

// Two node types of one GPU type (4- and 8-GPU A100 nodes): the planner plans on each,
// and a record is checked against, and under GpuTypeBy=feature asks Slurm for, every node
// type that holds its GPUs and CPUs per node. Before, the first node type of the GPU type
// was taken: a plan of 2 nodes x 8 GPUs asked for the 4-GPU nodes' feature (it never
// ran), and job_modify refused the plugin's own record ("no node type holds 8 GPUs").
class TwoNodeTypesOfOneGpu : public ::testing::Test {
 protected:
  static std::string conf_text(bool by_feature) {
    return "GpuType=a100-80g Aliases=a100 MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 "
           "PcieBandwidthGBps=24\n"
           "NodeType=a4 Gpu=a100-80g Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25 Nics=1 Features=a4\n"
           "NodeType=a8 Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25 Nics=2 Features=a8\n"
           "NodeType=a16 Gpu=a100-80g Gpus=16 Cpus=64 MemoryGiB=512 NetworkBandwidthGBps=25 Nics=2 Features=a16\n"
           "NodeName=s[1-2] NodeType=a4\nNodeName=b[1-2] NodeType=a8\n"
           "ModelCatalog=" + test::source_dir() + "/share/models.json\n" + (by_feature ? "GpuTypeBy=feature\n" : "");
  }
  void load(plugin::SubmitHandler& h, bool by_feature) {
    const std::string conf = ::testing::TempDir() + (by_feature ? "/morph-two-feature.conf" : "/morph-two-gres.conf");
    std::ofstream(conf) << conf_text(by_feature);
    h.load(conf, "/nonexistent");
    ASSERT_EQ(h.load_error(), "");
  }
  // A record of `nodes` x `gpus_per_node` A100s at `cpus_per_gpu`, pure data parallelism.
  static std::string record(int nodes, int gpus_per_node, int cpus_per_gpu, const std::string& constraint = "") {
    JobRecord r;
    set_morph_option(r.request, "model", "gpt2-1.5b");
    set_morph_option(r.request, "batch", "64");
    r.request.seq_len = 1024;
    r.current.gpu_type = "a100-80g";
    r.current.nodes = nodes;
    r.current.gpus_per_node = gpus_per_node;
    r.current.cpus_per_gpu = cpus_per_gpu;
    r.current.plan = ExecutionPlan{.dp = nodes * gpus_per_node, .micro_batch_size = 64 / (nodes * gpus_per_node)};
    r.current.iter_ms = 100;
    r.constraint = constraint;
    return to_admin_comment(r);
  }
};

TEST_F(TwoNodeTypesOfOneGpu, TheSizedRecordAsksOnlyForNodeTypesThatHoldIt) {
  plugin::SubmitHandler handler;
  load(handler, true);
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=llama2-7b", "MORPH_REQUEST_BATCH=512"};
  const plugin::SubmitOutput out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord sized = parse_admin_comment(out.request.admin_comment);
  // Only the 8-GPU nodes hold more than 4 GPUs; a16 has no nodes in morph.conf.
  EXPECT_EQ(out.request.features, sized.current.gpus_per_node > 4 ? "a8" : "a4|a8") << out.request.admin_comment;
  // job_modify takes the plugin's own record back (morphd writes it with NumNodes=).
  plugin::ModifyInput update;
  update.current_admin_comment = update.admin_comment = out.request.admin_comment;
  update.update.min_nodes = update.update.max_nodes = static_cast<std::uint32_t>(sized.current.nodes);
  const plugin::ModifyOutput same = handler.modify(update);
  ASSERT_EQ(same.verdict, plugin::Verdict::accept) << same.message;
  EXPECT_EQ(same.request->features, out.request.features);

  auto features_of = [&](const std::string& text) -> std::string {
    plugin::ModifyInput u;
    u.admin_comment = text;
    const plugin::ModifyOutput o = handler.modify(u);
    if (o.verdict != plugin::Verdict::accept) return "refused: " + o.message;
    return o.request->features.value_or("(none)");
  };
  EXPECT_EQ(features_of(record(2, 8, 4)), "a8");
  EXPECT_EQ(features_of(record(1, 4, 4)), "a4|a8");
  EXPECT_EQ(features_of(record(4, 4, 4)), "a4|a8");  // two nodes of each hold 4 GPUs
  EXPECT_EQ(features_of(record(1, 4, 5)), "a8");     // 20 CPUs: not on a 16-CPU node
  // The user's constraint stays ANDed with the node types.
  EXPECT_EQ(features_of(record(1, 4, 4, "ib")), "(ib)&(a4|a8)");
  EXPECT_EQ(features_of(record(1, 8, 4, "ib")), "(ib)&a8");
  // What no node holds is refused, naming what is missing.
  EXPECT_NE(features_of(record(4, 8, 4)).find("nodes=4 but morph.conf lists 2 nodes with 8 GPUs of type a100-80g"),
            std::string::npos);
  EXPECT_NE(features_of(record(4, 4, 5)).find("nodes=4 but morph.conf lists 2 nodes with 4 GPUs of type a100-80g "
                                              "and 20 CPUs"),
            std::string::npos);  // 20 CPUs: the 8-GPU nodes only
  EXPECT_NE(features_of(record(1, 8, 5)).find("cpus_per_gpu=5 x 8 GPUs is more than the 32 CPUs of a a8 node"),
            std::string::npos);
  EXPECT_NE(features_of(record(1, 16, 4)).find("no node of morph.conf holds 16 GPUs of type a100-80g"),
            std::string::npos);  // a16 has no NodeName line
}

TEST_F(TwoNodeTypesOfOneGpu, JobModifyAcceptsRecordsOfTheLargerNodeTypeUnderTypedGres) {
  plugin::SubmitHandler handler;
  load(handler, false);
  plugin::ModifyInput update;
  update.admin_comment = record(2, 8, 4);
  const plugin::ModifyOutput out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(out.request->tres_per_node, "gres:gpu:a100-80g:8");
  EXPECT_FALSE(out.request->features);
  EXPECT_EQ(out.request->cpus_per_task, 4);
}

// A new plan on the same GPUs that needs more host memory per node (ZeRO-Offload keeps
// the optimizer states in host memory) is more than a record: the memory follows, so that
// a restart is not killed under the job's cgroup limit. One that needs less stays a record.
TEST_F(Handler, AModifyThatNeedsMoreHostMemoryIsNotRecordOnly) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  const plugin::SubmitOutput submitted = handler.submit(in);
  ASSERT_EQ(submitted.verdict, plugin::Verdict::accept) << submitted.message;
  JobRecord r = parse_admin_comment(submitted.request.admin_comment);
  ASSERT_EQ(r.current.plan.pp, 1) << to_string(r.current.plan);
  r.current.plan.zero_stage = std::max(1, r.current.plan.zero_stage);
  r.current.plan.offload = true;
  const std::string offloaded = to_admin_comment(r);
  plugin::ModifyInput update;
  update.current_admin_comment = submitted.request.admin_comment;
  update.admin_comment = offloaded;
  const plugin::ModifyOutput out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_FALSE(out.record_only);
  ASSERT_TRUE(out.request);
  EXPECT_GT(out.request->memory_mb_per_node, submitted.request.memory_mb_per_node);
  update.current_admin_comment = offloaded;
  update.admin_comment = submitted.request.admin_comment;
  const plugin::ModifyOutput back = handler.modify(update);
  ASSERT_EQ(back.verdict, plugin::Verdict::accept) << back.message;
  EXPECT_TRUE(back.record_only);
}

// The owner of a pending job may lower its memory (Slurm lets them): a Morph job's follows
// its plan, and below what the plan needs per node the job would be OOM-killed when it
// starts. Memory per CPU or per GPU is not a per-node figure. (All three passed before.)
TEST_F(Handler, AnUpdateMayNotLowerTheMemoryBelowThePlansNeed) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  const plugin::SubmitOutput submitted = handler.submit(in);
  ASSERT_EQ(submitted.verdict, plugin::Verdict::accept) << submitted.message;
  const std::uint64_t need = submitted.request.memory_mb_per_node;
  ASSERT_GT(need, 1u);
  plugin::ModifyInput update;
  update.current_admin_comment = submitted.request.admin_comment;
  update.update.memory_mb_per_node = need - 1;
  plugin::ModifyOutput out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find(fmt::format("MinMemoryNode={}M is below the {}M per node the job's plan", need - 1, need)),
            std::string::npos)
      << out.message;
  update.update.memory_mb_per_node = need;
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::pass_through);
  update.update.memory_mb_per_node = 2 * need;  // more: Slurm's to allow (operators only)
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::pass_through);
  update.update.memory_mb_per_node = 100;
  update.update.memory_per_cpu = true;
  out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("MinMemoryCPU: Morph sizes a job's host memory per node"), std::string::npos)
      << out.message;
  EXPECT_EQ(out.refusal, plugin::Refusal::memory);
  update.update = {};
  update.update.mem_per_tres = "gres:gpu:10G";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
  // MinMemoryNode=0 is Slurm's "all of each node's memory", not "none given".
  update.update = {};
  update.update.memory_mb_per_node = 0;
  out = handler.modify(update);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_EQ(out.refusal, plugin::Refusal::memory);
  EXPECT_NE(out.message.find("MinMemoryNode=0 (all of each node's memory)"), std::string::npos) << out.message;
}

// sbatch --mem=0 asks for all of each node's memory (pn_min_memory 0): sizing would have
// replaced it with the plan's need, so it is refused, saying what to give instead.
TEST_F(Handler, MemZeroIsRefusedNotReplaced) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  in.user.memory_mb_per_node = 0;
  const plugin::SubmitOutput out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("--mem=0 (all of each node's memory): Morph sizes a job's host memory per node"),
            std::string::npos)
      << out.message;
  EXPECT_NE(out.message.find("give --mem=SIZE as a floor, or leave it out"), std::string::npos) << out.message;
  in.user.memory_mb_per_node = 1024;
  EXPECT_EQ(handler.submit(in).verdict, plugin::Verdict::accept);
}

// Review of the plugins: --mem was a floor of the request written back but no constraint
// of sizing: --morph-gpu-type=v100-32g --mem=200000 (v100 nodes hold 128 GiB) was
// accepted on a v100 node and left pending by Slurm for ever, with no word from Morph;
// and a decision cached for the same request without --mem was reused.
TEST_F(Handler, TheUsersMemLeavesOutNodeTypesWithLessMemory) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16", "MORPH_REQUEST_GPU_TYPE=v100-32g"};
  plugin::SubmitOutput out = handler.submit(in);  // cached without --mem
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_EQ(parse_admin_comment(out.request.admin_comment).current.gpu_type, "v100-32g");
  in.user.memory_mb_per_node = 200000;
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("--mem: 200000 MB per node is more than any node type Morph may use has (largest: "
                             "131072 MB)"),
            std::string::npos)
      << out.message;
  in.user.memory_mb_per_node = 131072;  // all of a v100 node's: it fits
  EXPECT_EQ(handler.submit(in).verdict, plugin::Verdict::accept);
  // Any GPU type: the a100 nodes (256 GiB) are left, and the record keeps the job there.
  in.spank_env.pop_back();
  in.user.memory_mb_per_node = 200000;
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord r = parse_admin_comment(out.request.admin_comment);
  EXPECT_EQ(r.current.gpu_type, "a100-80g");
  EXPECT_EQ(r.request.gpu_types, std::vector<std::string>{"a100-80g"});
  EXPECT_EQ(out.request.memory_mb_per_node, 200000u);
  in.user.memory_mb_per_node = 300000;
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("--mem: 300000 MB per node is more than any node type Morph may use has (largest: "
                             "262144 MB)"),
            std::string::npos)
      << out.message;
  // With a baseline on v100s, the type that --mem leaves out says why.
  in.user.memory_mb_per_node = 200000;
  in.user.tres_per_node = "gres:gpu:v100-32g:1";
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("v: its nodes have 131072 MB of memory, less than --mem=200000 MB"), std::string::npos)
      << out.message;
}

// Review of the plugins: a record-only update skipped the host-memory check when the
// job's current record named a model the catalog no longer has: the check threw inside
// the catch kept for an unreadable record, and record_only stayed true.
TEST_F(Handler, AnUpdateFromARecordWhoseMemoryIsUnknownIsNotRecordOnly) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  const plugin::SubmitOutput submitted = handler.submit(in);
  ASSERT_EQ(submitted.verdict, plugin::Verdict::accept) << submitted.message;
  JobRecord retired = parse_admin_comment(submitted.request.admin_comment);
  retired.request.model = "retired-13b";  // left the catalog since the job was sized
  plugin::ModifyInput update;
  update.current_admin_comment = to_admin_comment(retired);
  update.admin_comment = submitted.request.admin_comment;  // same GPUs, a model it knows
  const plugin::ModifyOutput out = handler.modify(update);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  EXPECT_FALSE(out.record_only);
  ASSERT_TRUE(out.request);
  EXPECT_EQ(out.request->memory_mb_per_node, submitted.request.memory_mb_per_node);
  update.current_admin_comment = submitted.request.admin_comment;  // known: only the record
  EXPECT_TRUE(handler.modify(update).record_only);
}

// slurmctld calls job_submit once per component of `sbatch ... : ...`: each would be sized
// as a whole Morph job.
TEST_F(Handler, AComponentOfAHeterogeneousJobCannotCarryMorphOptions) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  in.het_job_component = true;
  const plugin::SubmitOutput out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("Morph sizes whole jobs: a heterogeneous job (sbatch ... : ...) cannot carry --morph-*"),
            std::string::npos)
      << out.message;
  in.spank_env = {"SLURM_X=1"};  // a plain heterogeneous job passes
  EXPECT_EQ(handler.submit(in).verdict, plugin::Verdict::pass_through);
}

// --mem-per-gpu=100G reaches the plugin as "gres:gpu:102400" (MB): refused for what it
// is, not as a GPU count out of range; --gres=gpu:a100 is one GPU of type a100;
// --morph-plan describes the job's own GPUs and means nothing without them.
TEST_F(Handler, MessagesNameWhatTheUserGave) {
  plugin::SubmitInput in;
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16"};
  in.user.mem_per_tres = "gres:gpu:102400";
  plugin::SubmitOutput out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("--mem-per-gpu: Morph sizes host memory per node; use --mem"), std::string::npos)
      << out.message;
  in.user = {};
  in.user.tres_per_node = "gres:gpu:a100";
  in.spank_env.push_back("MORPH_REQUEST_SLA=guaranteed");
  out = handler.submit(in);
  ASSERT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
  const JobRecord r = parse_admin_comment(out.request.admin_comment);
  ASSERT_TRUE(r.baseline);
  EXPECT_EQ(r.baseline->gpu_type, "a100-80g");
  EXPECT_EQ(r.baseline->gpus(), 1);
  in.user = {};
  in.spank_env = {"MORPH_REQUEST_MODEL=gpt2-1.5b", "MORPH_REQUEST_BATCH=16", "MORPH_REQUEST_PLAN=dp=4"};
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::reject);
  EXPECT_NE(out.message.find("--morph-plan=dp=4 needs --gres or --gpus"), std::string::npos) << out.message;
  in.user.tres_per_job = "gres:gpu:4";
  out = handler.submit(in);
  EXPECT_EQ(out.verdict, plugin::Verdict::accept) << out.message;
}

}  // namespace
}  // namespace morph
