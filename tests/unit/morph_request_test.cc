#include "libmorph/request/morph_request.h"

#include <gtest/gtest.h>

#include "libmorph/request/gpu_tres.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

MorphRequest full_request() {
  MorphRequest r;
  set_morph_option(r, "model", "llama2-7b");
  set_morph_option(r, "batch", "512");
  set_morph_option(r, "seq", "2048");
  set_morph_option(r, "sla", "Guaranteed");
  set_morph_option(r, "plans", "DP,zero");
  set_morph_option(r, "gpus", "2-16");
  set_morph_option(r, "gpu-type", "A100-80g,v100-32g");
  set_morph_option(r, "framework", "deepspeed");
  set_morph_option(r, "plan", "dp=4,tp=2");
  set_morph_option(r, "iterations", "+25000");
  set_morph_option(r, "adaptive-batch", "256:4096");
  return r;
}

TEST(MorphRequest, OptionsBecomeTypedValues) {
  const MorphRequest r = full_request();
  EXPECT_EQ(r.model, "llama2-7b");
  EXPECT_EQ(r.global_batch, 512);
  EXPECT_EQ(r.seq_len, 2048);
  EXPECT_EQ(r.sla, Sla::guaranteed);
  EXPECT_TRUE(r.sla_given);
  EXPECT_EQ(r.plans, "dp,zero");
  EXPECT_EQ(r.gpus_min, 2);
  EXPECT_EQ(r.gpus_max, 16);
  EXPECT_EQ(r.gpu_types, (std::vector<std::string>{"a100-80g", "v100-32g"}));
  EXPECT_EQ(r.framework, Framework::deepspeed);
  EXPECT_EQ(r.baseline_plan, "dp=4,tp=2");
  EXPECT_EQ(r.iterations, 25000);
  EXPECT_EQ(r.adaptive_min, 256);
  EXPECT_EQ(r.adaptive_max, 4096);
  EXPECT_NO_THROW(validate_request(r));
  MorphRequest outside = r;
  set_morph_option(outside, "adaptive-batch", "1024:4096");  // --morph-batch 512 is below it
  EXPECT_THROW(validate_request(outside), Error);
}

TEST(MorphRequest, JobEnvironmentRoundTrip) {
  const MorphRequest r = full_request();
  std::vector<std::string> storage;
  for (const auto& [name, value] : to_job_env(r)) storage.push_back(name + "=" + value);
  storage.push_back("SLURM_SOMETHING=else");
  std::vector<std::string_view> env(storage.begin(), storage.end());
  MorphRequest back;
  ASSERT_TRUE(from_job_env(env, back));
  EXPECT_EQ(back, r);
  MorphRequest none;
  EXPECT_FALSE(from_job_env({"PATH=/bin", "MORPH_PLAN=dp=1"}, none));
}

TEST(MorphRequest, DefaultsStayOutOfTheEnvironment) {
  MorphRequest r;
  set_morph_option(r, "model", "gpt2");
  set_morph_option(r, "batch", "16");
  EXPECT_EQ(to_job_env(r).size(), 2u);
  EXPECT_EQ(describe(r), "gpt2 batch 16");
}

TEST(MorphRequest, HostileEnvironmentIsRefused) {
  MorphRequest a, b;
  EXPECT_THROW(from_job_env({"MORPH_REQUEST_MODEL=gpt2", "MORPH_REQUEST_BATCH=1e400"}, a), Error);
  EXPECT_THROW(from_job_env({"MORPH_REQUEST_BATCH=8"}, b), Error);  // no model
  EXPECT_THROW(set_morph_option(b, "colour", "red"), Error);
  // A NUL byte would end the value the C checks see: the rest would pass unchecked.
  using namespace std::string_literals;
  EXPECT_THROW(set_morph_option(b, "model", "gpt2\0$(reboot) x=y"s), Error);
  EXPECT_THROW(request_integer("batch", "12\0junk"s, 1, 100), Error);
  EXPECT_EQ(request_integer("batch", "12", 1, 100), 12);
}

TEST(GpuTres, ParsesSlurmsForms) {
  auto g = parse_gpu_tres("gres:gpu:a100-80g:8", "x");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->type, "a100-80g");
  EXPECT_EQ(g->count, 8);
  g = parse_gpu_tres("gres:gpu:4", "x");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->type, "");
  EXPECT_EQ(g->count, 4);
  g = parse_gpu_tres("gres:shard:2,gres/gpu:v100:2;license:x:1", "x");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->type, "v100");
  EXPECT_EQ(gpu_tres("a100", 4), "gres:gpu:a100:4");
  for (const char* bad : {"gres:gpu:+4", "gres/gpu:a100=2", "gres:gpu: 4", "gres:gpu:a 100:2"})
    EXPECT_THROW(parse_gpu_tres(bad, "x"), Error) << bad;
}

// Slurm reads one word after "gpu" as a type of one GPU when it is not a number
// (--gres=gpu:a100); it was refused as "'a100' is not an integer".
TEST(GpuTres, ATypeAloneIsOneGpuOfThatType) {
  auto g = parse_gpu_tres("gres:gpu:a100", "--gres");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->type, "a100");
  EXPECT_EQ(g->count, 1);
  g = parse_gpu_tres("gres:gpu:8", "--gres");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->type, "");
  EXPECT_EQ(g->count, 8);
}

// --mem-per-gpu=100G is "gres:gpu:102400": a GPU entry whose value is no GPU count.
TEST(GpuTres, NamesGpusWhateverTheirValues) {
  EXPECT_TRUE(names_gpus("gres:gpu:102400"));
  EXPECT_TRUE(names_gpus("gres:shard:1, gres/gpu:a100:4096"));
  EXPECT_FALSE(names_gpus("gres:shard:1"));
  EXPECT_FALSE(names_gpus("gpu:4"));
  EXPECT_FALSE(names_gpus(""));
}

TEST(GpuTres, WithoutTheGresPrefixItIsNoGpuRequest) {
  // ARCHITECTURE.md: "gpu:4" is silently ignored by slurmctld.
  EXPECT_FALSE(parse_gpu_tres("gpu:4", "x"));
  EXPECT_FALSE(parse_gpu_tres("", "x"));
  EXPECT_FALSE(parse_gpu_tres("gres:gpumem:4", "x"));
  EXPECT_THROW(parse_gpu_tres("gres:gpu:a:b:c", "x"), Error);
  EXPECT_THROW(parse_gpu_tres("gres:gpu:2k", "x"), Error);
  EXPECT_THROW(parse_gpu_tres("gres:gpu:a100:zero", "x"), Error);
  EXPECT_THROW(parse_gpu_tres("gres:gpu:2,gres:gpu:a100:2", "x"), Error);
}

// slurmctld reads an entry from its first "gres:" on: "xgres:gpu:a100-80g:8" got a job
// planned for 1 GPU 8 of them past job_modify, which took it for another GRES (security
// review).
TEST(GpuTres, AnEntryIsReadFromItsGresPrefixWhereverItIs) {
  EXPECT_THROW(parse_gpu_tres("gres:gpu:a100-80g:1,xgres:gpu:a100-80g:8", "x"), Error) << "two GPU requests";
  const auto hidden = parse_gpu_tres("xgres:gpu:a100-80g:8", "x");
  ASSERT_TRUE(hidden);
  EXPECT_EQ(hidden->count, 8);
  EXPECT_TRUE(names_gpus("gres:shard:1,junk/gres/gpu:2"));
  EXPECT_EQ(without_gpus("gres:shard:2,xgres:gpu:8"), "gres:shard:2");
  EXPECT_FALSE(parse_gpu_tres("xgres:shard:8", "x"));
}

}  // namespace
}  // namespace morph
