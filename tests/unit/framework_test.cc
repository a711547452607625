// Framework renderings (libmorph/launch/framework.h) of the rule files in
// share/frameworks: arguments, environment and DeepSpeed config under the plan families,
// the batch identity, refusals, and the strict rule parser.
#include "libmorph/launch/framework.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libmorph/planner/framework_planning.h"
#include "libmorph/util/error.h"
#include "libmorph/util/text_file.h"
#include "test_support.h"

namespace morph::launch {
namespace {

using nlohmann::json;
using Args = std::vector<std::string>;

std::string frameworks_dir() { return test::source_dir() + "/share/frameworks"; }
Framework framework(const std::string& name) { return Framework::find(name, {frameworks_dir()}); }

ExecutionPlan plan_of(int dp, int tp, int pp, int zero, bool offload, bool gc, int ga, int mb, int mbs) {
  ExecutionPlan p = test::make_plan(dp, tp, pp, ga, mb, mbs);
  p.zero_stage = zero;
  p.offload = offload;
  p.checkpointing = gc;
  return p;
}

RenderContext context_of(const ExecutionPlan& plan, int gpus_per_node = 8) {
  RenderContext c;
  c.record.request.model = "gpt2-1.5b";
  c.record.request.global_batch = plan.global_batch();
  c.record.request.seq_len = 1024;
  c.record.current.gpu_type = "a100-80g";
  c.record.current.gpus_per_node = std::min(gpus_per_node, plan.gpus());
  c.record.current.nodes = plan.gpus() / c.record.current.gpus_per_node;
  c.record.current.plan = plan;
  c.config_dir = "/run/morph/job7";
  return c;
}

constexpr const char* kNoError = "(no error)";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return kNoError;
}

Args megatron_base(int tp, int pp, int mbs, std::int64_t batch) {
  return {"--tensor-model-parallel-size", std::to_string(tp), "--pipeline-model-parallel-size", std::to_string(pp),
          "--micro-batch-size", std::to_string(mbs), "--global-batch-size", std::to_string(batch),
          "--seq-length", "1024"};
}

Args concat(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Data parallelism reduces under the backward pass; ZeRO-1 in the performance model's buckets.
const Args kMegatronOverlap{"--overlap-grad-reduce"};
const Args kMegatronZeroOne{"--overlap-grad-reduce", "--use-distributed-optimizer", "--ddp-bucket-size", "200000000"};

// The DeepSpeed config rendered for `plan`, checked for the batch identity.
json deepspeed_config(const ExecutionPlan& plan, const Rendering& r) {
  EXPECT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files.at(0).first, "/run/morph/job7/deepspeed.json");
  const json config = json::parse(r.files.at(0).second);
  EXPECT_EQ(config["train_batch_size"].get<std::int64_t>(),
            config["train_micro_batch_size_per_gpu"].get<std::int64_t>() *
                config["gradient_accumulation_steps"].get<std::int64_t>() * plan.dp)
      << to_string(plan);
  EXPECT_EQ(config["train_batch_size"].get<std::int64_t>(), plan.global_batch());
  return config;
}

json deepspeed_expected(std::int64_t batch, int mbs, int ga, json zero) {
  zero["overlap_comm"] = true;
  zero["reduce_bucket_size"] = 200000000;
  zero["allgather_bucket_size"] = 200000000;
  return {{"train_batch_size", batch},     {"train_micro_batch_size_per_gpu", mbs}, {"gradient_accumulation_steps", ga},
          {"steps_per_print", 100},        {"bf16", {{"enabled", true}}},           {"zero_optimization", std::move(zero)}};
}

Args deepspeed_base(int tp, int pp, int mbs, std::int64_t batch, int zero) {
  Args a{"--deepspeed", "--deepspeed_config", "/run/morph/job7/deepspeed.json", "--tensor-model-parallel-size",
         std::to_string(tp), "--pipeline-model-parallel-size", std::to_string(pp)};
  if (pp == 1) a.push_back("--no-pipeline-parallel");
  return concat(a, {"--micro-batch-size", std::to_string(mbs), "--global-batch-size", std::to_string(batch),
                    "--seq-length", "1024", "--zero-stage", std::to_string(zero), "--bf16"});
}

TEST(Framework, ThreeDPlan) {
  const ExecutionPlan plan = plan_of(2, 2, 2, 0, false, false, 1, 4, 2);  // batch 2*4*2 = 16
  const Rendering m = framework("megatron").render(context_of(plan));
  EXPECT_EQ(m.args, concat(megatron_base(2, 2, 2, 16), kMegatronOverlap));
  EXPECT_TRUE(m.files.empty());
  // Without data parallelism there is no gradient reduction to overlap.
  EXPECT_EQ(framework("megatron").render(context_of(plan_of(1, 2, 2, 0, false, false, 1, 4, 2))).args,
            megatron_base(2, 2, 2, 8));
  const std::vector<std::pair<std::string, std::string>> env{
      {"MORPH_FRAMEWORK", "megatron"}, {"MORPH_PRECISION", "bf16"}, {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}};
  EXPECT_EQ(m.env, env);

  const Rendering d = framework("deepspeed").render(context_of(plan));
  EXPECT_EQ(d.args, deepspeed_base(2, 2, 2, 16, 0));
  // A pipeline's micro-batch count is DeepSpeed's gradient accumulation.
  EXPECT_EQ(deepspeed_config(plan, d), deepspeed_expected(16, 2, 4, {{"stage", 0}}));
  const std::vector<std::pair<std::string, std::string>> ds_env{
      {"MORPH_FRAMEWORK", "deepspeed"},           {"LOCAL_SIZE", "8"},         {"CROSS_SIZE", "1"},
      {"CUDA_DEVICE_MAX_CONNECTIONS", "1"}, {"MORPH_PRECISION", "bf16"}};
  EXPECT_EQ(d.env, ds_env);
}

TEST(Framework, ZeroOneIsMegatronsDistributedOptimizer) {
  const ExecutionPlan plan = plan_of(16, 1, 1, 1, false, false, 1, 1, 4);  // 64, two nodes
  const Rendering m = framework("megatron").render(context_of(plan));
  EXPECT_EQ(m.args, concat(megatron_base(1, 1, 4, 64), kMegatronZeroOne));
  const Rendering d = framework("deepspeed").render(context_of(plan));
  EXPECT_EQ(d.args, deepspeed_base(1, 1, 4, 64, 1));
  EXPECT_EQ(deepspeed_config(plan, d), deepspeed_expected(64, 4, 1, {{"stage", 1}}));
  EXPECT_EQ(d.env.at(2), (std::pair<std::string, std::string>{"CROSS_SIZE", "2"}));
}

TEST(Framework, ZeroTwoAndThreeRunOnlyUnderDeepSpeed) {
  for (int zero : {2, 3}) {
    const ExecutionPlan plan = plan_of(4, 1, 1, zero, false, false, 2, 1, 2);  // 16
    const std::string message = error_of([&] { framework("megatron").render(context_of(plan)); });
    EXPECT_NE(message.find("megatron cannot run plan dp=4 tp=1 pp=1 zero=" + std::to_string(zero)), std::string::npos)
        << message;
    EXPECT_NE(message.find("ZeRO stage " + std::to_string(zero)), std::string::npos) << message;
    const Rendering d = framework("deepspeed").render(context_of(plan));
    EXPECT_EQ(d.args, deepspeed_base(1, 1, 2, 16, zero));
    EXPECT_EQ(deepspeed_config(plan, d), deepspeed_expected(16, 2, 2, {{"stage", zero}}));
  }
}

TEST(Framework, ThePlannersFeaturesAreWhatTheRulesRun) {
  // framework_plan_features (what job_submit and morphd plan for) against each shipped
  // framework's refuse rules (what morphrun runs), over every ZeRO stage, offload and 3D.
  const std::pair<const char*, morph::Framework> names[] = {
      {"megatron", morph::Framework::megatron}, {"deepspeed", morph::Framework::deepspeed},
      {"torch", morph::Framework::torch}};
  int checked = 0, refusals = 0;
  for (const auto& [name, id] : names)
    for (int pp : {1, 2})
      for (int zero : {0, 1, 2, 3})
        for (bool offload : {false, true}) {
          if (offload && zero != 2) continue;
          const ExecutionPlan plan = plan_of(4, 1, pp, zero, offload, false, pp > 1 ? 1 : 2, pp > 1 ? 2 : 1, 2);
          if (error_of([&] { validate_plan_shape(plan, "plan"); }) != kNoError) continue;  // no framework runs it
          const bool planned = (plan_features(plan) & ~framework_plan_features(id)) == 0;
          const std::string refused = error_of([&] { framework(name).render(context_of(plan)); });
          EXPECT_EQ(planned, refused == kNoError) << name << " " << to_string(plan) << ": " << refused;
          ++checked;
          refusals += refused != kNoError;
        }
  EXPECT_EQ(checked, 3 * 7);  // ZeRO 0-3 and offload without pipelines, ZeRO 0-1 with them
  EXPECT_EQ(refusals, 3);     // Megatron's ZeRO-2, ZeRO-3 and offload
}

TEST(Framework, OffloadMovesTheOptimizerToTheCpu) {
  const ExecutionPlan plan = plan_of(4, 1, 1, 2, true, false, 1, 1, 4);  // 16
  const std::string message = error_of([&] { framework("megatron").render(context_of(plan)); });
  EXPECT_NE(message.find("megatron cannot run plan"), std::string::npos) << message;
  EXPECT_NE(message.find("offload=1"), std::string::npos) << message;
  const Rendering d = framework("deepspeed").render(context_of(plan));
  EXPECT_EQ(d.args, concat(deepspeed_base(1, 1, 4, 16, 2), {"--cpu-optimizer"}));
  EXPECT_EQ(deepspeed_config(plan, d),
            deepspeed_expected(16, 4, 1, {{"stage", 2}, {"offload_optimizer", {{"device", "cpu"}, {"pin_memory", true}}}}));
}

TEST(Framework, GradientCheckpointing) {
  const ExecutionPlan plan = plan_of(4, 1, 1, 0, false, true, 1, 1, 8);  // 32
  const Rendering m = framework("megatron").render(context_of(plan));
  EXPECT_EQ(m.args, concat(concat(megatron_base(1, 1, 8, 32), {"--recompute-granularity", "full", "--recompute-method",
                                                                "uniform", "--recompute-num-layers", "1"}),
                           kMegatronOverlap));
  const Rendering d = framework("deepspeed").render(context_of(plan));
  EXPECT_EQ(d.args, concat(deepspeed_base(1, 1, 8, 32, 0), {"--checkpoint-activations", "--deepspeed-activation-checkpointing"}));
  json expected = deepspeed_expected(32, 8, 1, {{"stage", 0}});
  expected["activation_checkpointing"] = {
      {"partition_activations", false}, {"contiguous_memory_optimization", false}, {"cpu_checkpointing", false}};
  EXPECT_EQ(deepspeed_config(plan, d), expected);
}

TEST(Framework, GradientAccumulationAndCheckpointFolders) {
  const ExecutionPlan plan = plan_of(2, 1, 1, 1, false, false, 8, 1, 2);  // 32
  RenderContext c = context_of(plan);
  c.checkpoint_dir = "/ckpt/job7";
  c.resume_dir = "/ckpt/job7/resharded";
  const Rendering m = framework("megatron").render(c);
  EXPECT_EQ(m.args,
            concat(concat(megatron_base(1, 1, 2, 32), kMegatronZeroOne), {"--save", "/ckpt/job7", "--load", "/ckpt/job7/resharded"}));
  const Rendering d = framework("deepspeed").render(c);
  EXPECT_EQ(d.args, concat(deepspeed_base(1, 1, 2, 32, 1), {"--save", "/ckpt/job7", "--load", "/ckpt/job7/resharded"}));
  EXPECT_EQ(deepspeed_config(plan, d), deepspeed_expected(32, 2, 8, {{"stage", 1}}));
}

TEST(Framework, TorchGetsOnlyEnvironment) {
  const Rendering t = framework("torch").render(context_of(plan_of(8, 1, 1, 3, false, true, 1, 1, 1)));
  EXPECT_TRUE(t.args.empty());
  EXPECT_TRUE(t.files.empty());
  EXPECT_EQ(t.env, (std::vector<std::pair<std::string, std::string>>{{"MORPH_FRAMEWORK", "torch"},
                                                                     {"MORPH_PRECISION", "bf16"}}));
}

TEST(Framework, GpusWithoutBf16TrainInFp16WithLossScaling) {
  const ExecutionPlan plan = plan_of(8, 1, 1, 1, false, false, 1, 1, 4);  // 32
  RenderContext c = context_of(plan);
  c.bf16 = false;
  const Rendering d = framework("deepspeed").render(c);
  Args want = deepspeed_base(1, 1, 4, 32, 1);
  want.back() = "--fp16";
  EXPECT_EQ(d.args, want);
  const json config = deepspeed_config(plan, d);
  EXPECT_FALSE(config.contains("bf16"));
  EXPECT_EQ(config["fp16"]["enabled"], true);
  EXPECT_EQ(config["fp16"]["loss_scale"], 0);  // dynamic
  EXPECT_EQ(d.env.back(), (std::pair<std::string, std::string>{"MORPH_PRECISION", "fp16"}));
  for (const char* name : {"megatron", "torch"}) {
    const Rendering r = framework(name).render(c);
    EXPECT_EQ(r.env.at(1), (std::pair<std::string, std::string>{"MORPH_PRECISION", "fp16"})) << name;
  }
  // Megatron's precision stays the script's: no argument either way.
  c.bf16 = true;
  EXPECT_EQ(framework("megatron").render(c).args, framework("megatron").render(context_of(plan)).args);
}

TEST(Framework, RefusesAPlanThatDoesNotRunTheJobsBatch) {
  for (const char* name : {"megatron", "deepspeed", "torch"}) {
    RenderContext c = context_of(plan_of(4, 1, 1, 0, false, false, 2, 1, 4));  // 32
    c.record.request.global_batch = 48;
    const std::string message = error_of([&] { framework(name).render(c); });
    EXPECT_NE(message.find(std::string(name) + ": plan dp=4"), std::string::npos) << message;
    EXPECT_NE(message.find("runs 32 samples per step"), std::string::npos) << message;
    EXPECT_NE(message.find("global batch is 48"), std::string::npos) << message;
  }
}

TEST(Framework, MissingValuesAreNamed) {
  RenderContext c = context_of(plan_of(2, 1, 1, 0, false, false, 1, 1, 2));
  c.record.request.seq_len = 0;
  EXPECT_NE(error_of([&] { framework("megatron").render(c); }).find("{seq} has no value"), std::string::npos);
  c = context_of(plan_of(2, 1, 1, 0, false, false, 1, 1, 2));
  c.config_dir.clear();
  EXPECT_NE(error_of([&] { framework("deepspeed").render(c); }).find("deepspeed: deepspeed.json is generated"),
            std::string::npos);
}

// Rules from text, for the parser's errors.
std::string parse_error(const std::string& text) {
  return error_of([&] { Framework::parse(text, "site.json"); });
}

TEST(FrameworkRules, StrictParser) {
  EXPECT_EQ(parse_error(R"({"framework": "x", "flags": []})"),
            "site.json: unknown key 'flags' (known: framework, description, refuse, args, env, config_file, comment)");
  EXPECT_NE(parse_error(R"({"framework": "x", "args": [{"add": ["a"], "if": "gc"}]})")
                .find("site.json: args[0]: unknown key 'if'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "args": [{"add": ["--tp={tensor}"]}]})")
                .find("site.json: args[0].add[0]: unknown placeholder {tensor} (known: framework, model, dp, tp"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "args": [{"when": "fp8", "add": ["a"]}]})")
                .find("site.json: args[0].when: unknown predicate 'fp8'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "refuse": [{"when": "gc>=1", "message": "m"}]})")
                .find("site.json: refuse[0].when: unknown predicate 'gc>=1'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "env": [{"name": "A", "value": "{zero", "when": ["zero>=x"]}]})")
                .find("site.json: env[0].when: predicate 'zero>=x'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "config_file": {"name": "c.json", "content": {"a": {"$if": "gc"}}}})")
                .find("site.json: config_file.content.a.$if: unknown directive"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "config_file": {"name": "c.json", "content": {"a": "{micro}"}}})")
                .find("site.json: config_file.content.a: unknown placeholder {micro}"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "args": [{"add": ["--c", "{config_file}"]}]})")
                .find("args[0].add[1] uses {config_file} but the rules declare no config_file"),
            std::string::npos);
  EXPECT_EQ(parse_error(R"({"framework": "x", "args": [], "args": []})"), "site.json: key 'args' appears twice in one object");
  EXPECT_NE(parse_error(R"({"framework": "x", "env": [{"name": "1A", "value": "v"}]})").find("environment variable name"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"framework": "x", "env": [{"name": "WORLD_SIZE", "value": "{gpus}"}]})")
                .find("env[0].name: WORLD_SIZE is set by morphrun"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"args": []})").find("missing 'framework'"), std::string::npos);
  EXPECT_NE(parse_error("{").find("site.json: not JSON"), std::string::npos);
}

TEST(FrameworkRules, TemplatesKeepTypesAndBraces) {
  const Framework f = Framework::parse(R"({"framework": "site",
      "args": [{"add": ["--plan={{dp={dp},gc={gc}}}"]}, {"when": ["!gc", "dp!=2"], "add": ["never"]}],
      "config_file": {"name": "site.json", "content": {"dp": "{dp}", "gc": "{gc}", "text": "{dp}x",
                      "list": [{"$when": "gc", "a": 1}, {"$when": "zero<1", "b": "{model}"}]}}})",
                                       "site.json");
  const Rendering r = f.render(context_of(plan_of(2, 1, 1, 0, false, false, 1, 1, 2)));
  EXPECT_EQ(r.args, (Args{"--plan={dp=2,gc=false}"}));
  EXPECT_EQ(json::parse(r.files.at(0).second),
            json({{"dp", 2}, {"gc", false}, {"text", "2x"}, {"list", json::array({{{"b", "gpt2-1.5b"}}})}}));
}

TEST(FrameworkRules, AVariableSetTwiceIsAnError) {
  const Framework f = Framework::parse(R"({"framework": "site", "env": [
      {"name": "A", "value": "1"}, {"when": "gc", "name": "A", "value": "2"}]})",
                                       "site.json");
  EXPECT_EQ(f.render(context_of(plan_of(2, 1, 1, 0, false, false, 1, 1, 2))).env.size(), 1u);
  EXPECT_NE(error_of([&] { f.render(context_of(plan_of(2, 1, 1, 0, false, true, 1, 1, 2))); })
                .find("site.json: A is set twice under plan dp=2"),
            std::string::npos);
}

TEST(FrameworkRules, UnknownFrameworkListsTheKnownOnes) {
  const std::string message = error_of([] { Framework::find("jax", {"/nonexistent", frameworks_dir()}); });
  EXPECT_NE(message.find("unknown framework 'jax' (known: deepspeed, megatron, torch; searched /nonexistent, "),
            std::string::npos)
      << message;
  EXPECT_NE(error_of([] { Framework::find("../etc/x", {frameworks_dir()}); }).find("unknown framework"),
            std::string::npos);
}

TEST(FrameworkRules, InstalledFilesParseAndAreDistributed) {
  const std::vector<std::string> names = framework_names({frameworks_dir()});
  EXPECT_EQ(names, (std::vector<std::string>{"deepspeed", "megatron", "torch"}));
  const std::string share_mk = read_text_file(test::source_dir() + "/share/local.mk", "share/local.mk");
  for (const std::string& name : names) {
    EXPECT_EQ(framework(name).name(), name);
    EXPECT_FALSE(framework(name).description().empty());
    EXPECT_NE(share_mk.find("%reldir%/frameworks/" + name + ".json"), std::string::npos) << name << " is not installed";
  }
}

}  // namespace
}  // namespace morph::launch
