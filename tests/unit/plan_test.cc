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

TEST(Plan, WithGlobalBatchChangesOnlyTheAccumulationSteps) {
  const ExecutionPlan p = test::make_plan(4, 2, 2, 3, 2, 8);  // 4 · 3 · 2 · 8 = 192 samples
  const std::optional<ExecutionPlan> q = with_global_batch(p, 320);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->global_batch(), 320);
  EXPECT_EQ(q->ga_steps, 5);
  ExecutionPlan back = *q;
  back.ga_steps = p.ga_steps;
  EXPECT_EQ(back, p);
  EXPECT_FALSE(with_global_batch(p, 200)) << "64 samples per accumulation step do not divide 200";
  EXPECT_FALSE(with_global_batch(p, 32)) << "fewer samples than one accumulation step";
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
  EXPECT_THROW(parse_plan("dp=0 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=4 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=0 offload=1 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);  // offload needs ZeRO
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=2 zero=2 offload=0 gc=0 ga=1 mb=1 mbs=1", "plan"), Error);  // ZeRO-2 + PP
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=0 offload=0 gc=0 ga=1 mb=4 mbs=1", "plan"), Error);  // mb needs PP
  EXPECT_THROW(parse_plan("dp=1 tp=1 pp=1 zero=0 offload=maybe gc=0 ga=1 mb=1 mbs=1", "plan"), Error);
}

}  // namespace
}  // namespace morph
