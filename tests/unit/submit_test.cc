// Sizing at submission (libmorph/planner/submit_plan) and the job_submit_morph logic
// without Slurm (plugins/job_submit/submit_handler).
#include "libmorph/planner/submit_plan.h"

#include <fstream>

#include <gtest/gtest.h>

#include "libmorph/planner/plan_search.h"
#include "libmorph/util/error.h"
#include "plugins/job_submit/submit_handler.h"
#include "test_support.h"

namespace morph {
namespace {

std::string cluster_conf() {
  return "GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n"
         "GpuType=v100-32g MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=120 PcieBandwidthGBps=12\n"
         "NodeType=a Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25 Nics=2\n"
         "NodeType=v Gpu=v100-32g Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25 Nics=1\n"
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
  in.tres_per_node = "gres:gpu:a100-80g:2";
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
  update.tres_per_node = "gres:gpu:a100-80g:7";
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
  update.tres_per_node.clear();
  update.min_nodes = 9;
  EXPECT_EQ(handler.modify(update).verdict, plugin::Verdict::reject);
}

}  // namespace
}  // namespace morph
