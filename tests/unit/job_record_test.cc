#include "libmorph/record/job_record.h"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include "libmorph/record/plan_env.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

JobRecord sample() {
  JobRecord r;
  set_morph_option(r.request, "model", "llama2-7b");
  set_morph_option(r.request, "batch", "512");
  r.request.seq_len = 4096;
  Placement& p = r.current;
  p.gpu_type = "a100-80g";
  p.nodes = 2;
  p.gpus_per_node = 8;
  p.cpus_per_gpu = 4;
  p.plan.dp = 4;
  p.plan.tp = 4;
  p.plan.zero_stage = 1;
  p.plan.ga_steps = 4;
  p.plan.micro_batch_size = 32;
  p.iter_ms = 812.25;
  return r;
}

TEST(JobRecord, RoundTripsWithAndWithoutBaseline) {
  JobRecord r = sample();
  const std::string text = to_admin_comment(r);
  EXPECT_EQ(text.rfind("morph:v1 ", 0), 0u);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(parse_admin_comment(text), r);
  Placement base = r.current;
  base.nodes = 4;
  base.plan.dp = 8;
  base.plan.ga_steps = 2;
  base.iter_ms = 900;
  r.baseline = base;
  EXPECT_EQ(parse_admin_comment(to_admin_comment(r)), r);
}

// --morph-iterations (issue 11): the declared length travels in the record for morphd;
// records without it (all those written before) still parse.
TEST(JobRecord, DeclaredIterationsRoundTripAndAreChecked) {
  JobRecord r = sample();
  EXPECT_EQ(to_admin_comment(r).find("iterations="), std::string::npos);
  set_morph_option(r.request, "iterations", "25000");
  const std::string text = to_admin_comment(r);
  EXPECT_NE(text.find(" iterations=25000"), std::string::npos);
  EXPECT_EQ(parse_admin_comment(text).request.iterations, 25000);
  EXPECT_EQ(parse_admin_comment(text), r);
  std::string bad = text;
  bad.replace(bad.find("iterations=25000"), 16, "iterations=0");
  try {
    parse_admin_comment(bad);
    ADD_FAILURE() << "iterations=0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--morph-iterations: '0' is out of range"), std::string::npos) << e.what();
  }
}

// --morph-adaptive-batch (issue 15): the bounds travel in the record and reach every rank
// as MORPH_ADAPTIVE_BATCH; records without them still parse.
TEST(JobRecord, AdaptiveBatchBoundsRoundTripToTheRanks) {
  JobRecord r = sample();
  EXPECT_EQ(to_admin_comment(r).find("adaptive_batch="), std::string::npos);
  set_morph_option(r.request, "adaptive-batch", fmt::format("1:{}", 4 * r.request.global_batch));
  const std::string text = to_admin_comment(r);
  EXPECT_NE(text.find(fmt::format(" adaptive_batch=1:{}", 4 * r.request.global_batch)), std::string::npos) << text;
  EXPECT_EQ(parse_admin_comment(text), r);
  bool exported = false;
  for (const auto& [name, value] : plan_environment(r))
    exported |= name == "MORPH_ADAPTIVE_BATCH" && value == fmt::format("1:{}", 4 * r.request.global_batch);
  EXPECT_TRUE(exported);
  std::string outside = text;
  outside.replace(outside.find(" adaptive_batch="), std::string::npos, " adaptive_batch=1:1");
  EXPECT_THROW(parse_admin_comment(outside), Error) << "a starting batch outside the bounds";
}

// morphd plans an adaptive job for the batch it forecasts: its plan may process any batch
// within the bounds, never one outside them; a job of one batch keeps the strict check,
// and so does its baseline (the user's own plan).
TEST(JobRecord, AnAdaptiveJobsPlanMayProcessAnyBatchWithinItsBounds) {
  JobRecord r = sample();
  const std::int64_t batch = r.request.global_batch;
  set_morph_option(r.request, "adaptive-batch", fmt::format("{}:{}", batch, 4 * batch));
  const std::optional<ExecutionPlan> doubled = with_global_batch(r.current.plan, 2 * batch);
  ASSERT_TRUE(doubled);
  r.current.plan = *doubled;
  EXPECT_EQ(parse_admin_comment(to_admin_comment(r)), r);
  r.current.plan = *with_global_batch(r.current.plan, 8 * batch);
  EXPECT_THROW(parse_admin_comment(to_admin_comment(r)), Error) << "a plan beyond MAX";
  JobRecord fixed = sample();
  fixed.current.plan = *doubled;
  EXPECT_THROW(parse_admin_comment(to_admin_comment(fixed)), Error) << "a plan of another batch, not adaptive";
}

// GpuTypeBy=feature keeps the user's --constraint in the record (issue 15).
TEST(JobRecord, TheUsersConstraintRoundTrips) {
  JobRecord r = sample();
  r.constraint = "(ib|roce)&nvme";
  const std::string text = to_admin_comment(r);
  EXPECT_NE(text.find(" constraint=(ib|roce)&nvme"), std::string::npos) << text;
  EXPECT_EQ(parse_admin_comment(text), r);
  EXPECT_THROW(parse_admin_comment(text.substr(0, text.find(" constraint=")) + " constraint="), Error);
}

// The user's --gres and --constraint are one word each in the record: a space in them
// would add keys (iterations=, min_nodes=, ...) that no check of the submission has seen.
TEST(JobRecord, AUsersValueCannotAddKeysToTheRecord) {
  JobRecord r = sample();
  r.other_gres = "gres:shard:2 iterations=7 adaptive_batch=256:1024";
  EXPECT_THROW(to_admin_comment(r), Error);
  r = sample();
  r.constraint = "ib min_cpus=64 min_nodes=2";
  EXPECT_THROW(to_admin_comment(r), Error);
  for (const char* bad : {"ib\tnvme", "ib\nnvme", "ib\x7fnvme"}) {
    r.constraint = bad;
    EXPECT_THROW(to_admin_comment(r), Error) << static_cast<int>(bad[2]);
  }
  r = sample();
  r.other_gres = "gres:shard:2";
  r.constraint = "ib&nvme";
  EXPECT_EQ(parse_admin_comment(to_admin_comment(r)), r);
}

// The user's --mem and --mincpus travel as floors for every later plan's request.
TEST(JobRecord, TheUsersMemoryAndCpuFloorsRoundTripAndAreChecked) {
  JobRecord r = sample();
  EXPECT_EQ(to_admin_comment(r).find("mem_mb="), std::string::npos);
  r.memory_mb_per_node = 200000;
  r.min_cpus_per_node = 30;
  const std::string text = to_admin_comment(r);
  EXPECT_NE(text.find(" mem_mb=200000 min_cpus=30"), std::string::npos) << text;
  EXPECT_EQ(parse_admin_comment(text), r);
  const std::string base = text.substr(0, text.find(" mem_mb="));
  for (const char* bad : {" mem_mb=0", " mem_mb=1099511627777", " min_cpus=0", " min_cpus=65534", " mem_mb=x"})
    EXPECT_THROW(parse_admin_comment(base + bad), Error) << bad;
  EXPECT_EQ(parse_admin_comment(base + " min_cpus=65533").min_cpus_per_node, 65533);
}

// The user's -N (without a GPU request) travels as bounds on every later plan's nodes.
TEST(JobRecord, TheUsersNodeBoundsRoundTripAndHoldThePlacement) {
  JobRecord r = sample();
  ASSERT_EQ(r.current.nodes, 2);
  EXPECT_EQ(to_admin_comment(r).find(" min_nodes="), std::string::npos);
  r.min_nodes = 2;
  r.max_nodes = 4;
  const std::string text = to_admin_comment(r);
  EXPECT_NE(text.find(" min_nodes=2 max_nodes=4"), std::string::npos) << text;
  EXPECT_EQ(parse_admin_comment(text), r);
  EXPECT_EQ(node_bounds(r), "2-4");
  r.max_nodes = 0;
  EXPECT_EQ(parse_admin_comment(to_admin_comment(r)), r);
  EXPECT_EQ(node_bounds(r), "2-");
  const std::string base = text.substr(0, text.find(" min_nodes="));
  for (const char* bad : {" min_nodes=0", " max_nodes=0", " min_nodes=65537", " min_nodes=3 max_nodes=2"})
    EXPECT_THROW(parse_admin_comment(base + bad), Error) << bad;
  try {
    parse_admin_comment(base + " max_nodes=1");
    ADD_FAILURE() << "a placement on 2 nodes under max_nodes=1 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nodes=2 is outside the job's node bounds 1-1 (-N, its partitions' MinNodes and "
                                         "MaxNodes)"),
              std::string::npos)
        << e.what();
  }
}

TEST(JobRecord, StrictParsingNamesTheProblem) {
  const std::string good = to_admin_comment(sample());
  auto message = [](const std::string& text) {
    try {
      parse_admin_comment(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("morph:v2 model=x").find("not a morph:v1 record"), std::string::npos);
  EXPECT_NE(message(good + " colour=red").find("unknown key 'colour'"), std::string::npos);
  EXPECT_NE(message(good + " dp=4").find("dp given twice"), std::string::npos);
  std::string no_tp = good;
  no_tp.replace(no_tp.find(" tp=4"), 5, "");
  EXPECT_NE(message(no_tp).find("missing tp="), std::string::npos);
  std::string wrong_gpus = good;
  wrong_gpus.replace(wrong_gpus.find(" dp=4"), 5, " dp=2");
  EXPECT_NE(message(wrong_gpus).find("plan uses 8 GPUs, the placement 16"), std::string::npos);
  std::string wrong_batch = good;
  wrong_batch.replace(wrong_batch.find(" mbs=32"), 7, " mbs=16");
  EXPECT_NE(message(wrong_batch).find("processes 256 samples per iteration, the batch is 512"), std::string::npos);
  std::string bad_batch = good;
  bad_batch.replace(bad_batch.find("batch=512"), 9, "batch=-1");
  EXPECT_NE(message(bad_batch).find("--morph-batch"), std::string::npos);
  EXPECT_TRUE(is_job_record("  morph:v1 x"));
  EXPECT_FALSE(is_job_record("reviewed by ops"));
}

// A hostile record whose samples per iteration exceed 64 bits: the product wrapped (UB)
// and the reviewer's record below read as 2^64 + 2^20 = 2^20 samples, its batch. Refused,
// naming the fields.
TEST(JobRecord, SamplesBeyond64BitsAreRefused) {
  auto message = [](const std::string& text) {
    try {
      parse_admin_comment(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "morph:v1 model=gpt2-1.5b batch=1048576 seq=1024 sla=best-effort sla_given=0 "
                           "framework=torch plans=all gpus=1-0 gpu_types=- base_plan=- ";
  const std::string groups = message(
      head + "type=- nodes=17 gpus_per_node=1 cpus_per_gpu=1 dp=17 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 "
             "mbs=1048576 iter_ms=1.000 groups=a100-80g:nodes=16:workers=1048576:ga=1048576,"
             "v100-32g:nodes=1:workers=1:ga=1");
  EXPECT_NE(groups.find("groups= a100-80g: nodes x gpus_per_node x mbs x workers x ga is beyond 2^63"),
            std::string::npos)
      << groups;
  const std::string plan = message(
      head + "type=a100-80g nodes=65536 gpus_per_node=16 cpus_per_gpu=1 dp=524288 tp=1 pp=2 zero=0 offload=0 gc=0 "
             "ga=1048576 mb=1048576 mbs=1048576 iter_ms=1.000");
  EXPECT_NE(plan.find("dp*ga*mb*mbs (the global batch) is larger than 1073741824"), std::string::npos) << plan;
}

TEST(PlanEnvironment, ExportsThePlanOfTheRecord) {
  const auto env = plan_environment(sample());
  auto get = [&](const char* name) {
    for (const auto& [k, v] : env)
      if (k == name) return v;
    return std::string("missing");
  };
  EXPECT_EQ(get("MORPH_PLAN"), "dp=4 tp=4 pp=1 zero=1 offload=0 gc=0 ga=4 mb=1 mbs=32");
  EXPECT_EQ(get("MORPH_DP"), "4");
  EXPECT_EQ(get("MORPH_TP"), "4");
  EXPECT_EQ(get("MORPH_ZERO"), "1");
  EXPECT_EQ(get("MORPH_GA"), "4");
  EXPECT_EQ(get("MORPH_GC"), "0");
  EXPECT_EQ(get("MORPH_MICRO_BATCH"), "32");
  EXPECT_EQ(get("MORPH_GLOBAL_BATCH"), "512");
  EXPECT_EQ(get("MORPH_SEQ"), "4096");
  EXPECT_EQ(get("MORPH_GPU_TYPE"), "a100-80g");
  EXPECT_EQ(get("MORPH_NODES"), "2");
}

}  // namespace
}  // namespace morph
