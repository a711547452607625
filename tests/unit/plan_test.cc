#include "libmorph/plan/plan.h"

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "tests/unit/test_support.h"

namespace morph {
namespace {

TEST(Plan, OneLineFormRoundTrips) {
  ExecutionPlan p;
  p.dp = 4;
  p.tp = 4;
  p.zero_stage = 1;
  p.ga_steps = 4;
  p.micro_batch_size = 8;
  const std::string text = to_string(p);
  EXPECT_EQ(text, "dp=4 tp=4 pp=1 zero=1 offload=0 gc=0 ga=4 mb=1 mbs=8");
  EXPECT_EQ(parse_plan(text, "plan"), p);
  EXPECT_EQ(p.gpus(), 16);
  EXPECT_EQ(p.global_batch(), 128);
}

// The brief form keeps what sets the step's shape: a pipeline that also accumulates
// shows both its micro-batches and its steps (it showed mb= alone).
TEST(Plan, BriefFormShowsAPipelinesAccumulation) {
  ExecutionPlan p = parse_plan("dp=2 tp=2 pp=2 zero=0 offload=0 gc=1 ga=2 mb=4 mbs=1", "plan");
  EXPECT_EQ(brief(p), "dp=2 tp=2 pp=2 zero=0 gc=1 mb=4 ga=2 mbs=1");
  p.ga_steps = 1;
  EXPECT_EQ(brief(p), "dp=2 tp=2 pp=2 zero=0 gc=1 mb=4 mbs=1");
  EXPECT_EQ(brief(parse_plan("dp=4 tp=1 pp=1 zero=2 offload=1 gc=0 ga=1 mb=1 mbs=8", "plan")),
            "dp=4 tp=1 pp=1 zero=2 offload=1 ga=1 mbs=8");
}

// One rule cuts a replica's samples (the planner's search, its memory fit, Sia's and
// Morphling-R's data-parallel scaling): a pipeline flushes them together, without one
// they are accumulated, and a pipeline written with accumulation steps keeps that form.
TEST(Plan, MicroBatchesArePipelinedWithStagesAndAccumulatedWithout) {
  const ExecutionPlan flat = with_micro_batch_size(test::make_plan(4, 2, 1, 1, 1, 8), 24, 4);
  EXPECT_EQ(flat, test::make_plan(4, 2, 1, 6, 1, 4));
  const ExecutionPlan piped = with_micro_batch_size(test::make_plan(2, 1, 4, 1, 1, 8), 24, 4);
  EXPECT_EQ(piped, test::make_plan(2, 1, 4, 1, 6, 4));
  const ExecutionPlan written_as_ga = with_micro_batch_size(test::make_plan(2, 1, 4, 3, 1, 8), 24, 4);
  EXPECT_EQ(written_as_ga, test::make_plan(2, 1, 4, 6, 1, 4));
  const ExecutionPlan both = with_micro_batch_size(test::make_plan(2, 1, 4, 3, 2, 4), 24, 2);
  EXPECT_EQ(both, test::make_plan(2, 1, 4, 1, 12, 2));
  // The same flush either way, and a plan cut at its own size is itself.
  EXPECT_EQ(written_as_ga.flush_micro_batches(), 6);
  EXPECT_EQ(both.flush_micro_batches(), 12);
  for (const ExecutionPlan& p : {flat, piped, written_as_ga})
    EXPECT_EQ(with_micro_batch_size(p, p.global_batch() / p.dp, p.micro_batch_size), p) << to_string(p);
}

TEST(Plan, WithGlobalBatchKeepsTheLayoutAndNeverALargerMicroBatch) {
  const ExecutionPlan p = test::make_plan(4, 2, 2, 3, 2, 8);  // dp 4 · ga 3 · mb 2 · mbs 8 = 192 samples
  const std::optional<ExecutionPlan> q = with_global_batch(p, 320);  // 40 per micro-batch slot
  ASSERT_TRUE(q);
  EXPECT_EQ(q->global_batch(), 320);
  EXPECT_EQ(q->micro_batch_size, 8);
  EXPECT_EQ(q->ga_steps, 5);
  ExecutionPlan back = *q;
  back.ga_steps = p.ga_steps;
  EXPECT_EQ(back, p);
  const std::optional<ExecutionPlan> odd = with_global_batch(p, 200);  // 25 per slot: 5 x 5
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->micro_batch_size, 5);
  EXPECT_EQ(odd->ga_steps, 5);
  const std::optional<ExecutionPlan> small = with_global_batch(p, 24);  // 3 per slot: a smaller micro-batch
  ASSERT_TRUE(small);
  EXPECT_EQ(small->micro_batch_size, 3);
  EXPECT_EQ(small->ga_steps, 1);
  EXPECT_FALSE(with_global_batch(p, 196)) << "8 micro-batch slots do not divide 196";
  EXPECT_FALSE(with_global_batch(p, 4)) << "fewer samples than micro-batch slots";
}

TEST(Plan, APipelineFlushHoldsEveryAccumulationStepsMicroBatches) {
  // Megatron-LM: num_microbatches = global batch / (mbs · dp) = ga · mb, one 1F1B flush.
  EXPECT_EQ(test::make_plan(4, 2, 2, 3, 2, 8).flush_micro_batches(), 6);
  EXPECT_EQ(test::make_plan(1, 1, 4, 5, 1, 1).flush_micro_batches(), 5);
  EXPECT_EQ(test::make_plan(4, 1, 1, 3, 1, 8).flush_micro_batches(), 1) << "no pipeline: one micro-batch a pass";
  // The largest plan values do not overflow: 2^20 · 2^20.
  EXPECT_EQ(test::make_plan(1, 1, 2, 1 << 20, 1 << 20, 1).flush_micro_batches(), std::int64_t{1} << 40);
}

TEST(Plan, Families) {
  ExecutionPlan p;
  EXPECT_EQ(p.family(), "dp");
  p.zero_stage = 2;
  EXPECT_EQ(p.family(), "zero-dp");
  p.offload = true;
  p.checkpointing = true;
  EXPECT_EQ(p.family(), "zero-offload+gc");
  ExecutionPlan q;
  q.tp = 2;
  q.zero_stage = 1;
  EXPECT_EQ(q.family(), "3d+zero1");
}

TEST(Plan, ParseRejectsUnknownMissingDuplicateAndInvalid) {
  const std::string ok = "dp=1 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=1";
  EXPECT_NO_THROW(parse_plan(ok, "plan"));
  EXPECT_THROW(parse_plan(ok + " colour=1", "plan"), Error);
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1", "plan"), Error);
  EXPECT_THROW(parse_plan(ok + " dp=2", "plan"), Error);
  // Keys joined by commas count as keys: none is dropped, and none is given twice.
  EXPECT_EQ(parse_plan("dp=2,tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan").dp, 2);
  EXPECT_THROW(parse_plan("dp=2,tp=4 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);
  EXPECT_THROW(parse_plan("dp=0 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=4 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=0 offload=1 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);  // offload needs ZeRO
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=2 zero=2 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);  // ZeRO-2 + PP
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=4 mbs=1", "plan"), Error);  // mb needs PP
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=0 offload=maybe gc=0 ga=1 mb=1 mbs=1", "plan"), Error);
  // Factors each in range whose product, the global batch, is not: 2^64 + 4 wrapped to 4
  // in 64 bits (a review's row of `morph fit --points`).
  try {
    parse_plan("dp=27905 tp=1 pp=2 zero=0 offload=0 gc=0 ga=769546 mb=98954 mbs=8681", "plan");
    FAIL() << "a global batch of 2^64 + 4 was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "plan: dp*ga*mb*mbs (the global batch) is larger than 1073741824");
  }
  EXPECT_EQ(parse_plan("dp=1024 tp=1 pp=2 zero=0 offload=0 gc=0 ga=1 mb=1024 mbs=1024", "plan").global_batch(),
            std::int64_t{1} << 30);  // the largest batch a request may have
}

}  // namespace
}  // namespace morph
