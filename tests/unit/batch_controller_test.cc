// The SimiGrad rule of JABAS's adaptive batching (seed 004 §6.1) on a recorded similarity
// trace: the batch path, clamping to --morph-adaptive-batch and square-root LR scaling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "libmorph/adaptive/batch_controller.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

BatchControllerOptions trace_options() {
  BatchControllerOptions o;
  o.similarity_target = 0.1;
  o.adaptive_rate = 0.1;
  o.interval_iterations = 100;
  o.range = parse_adaptive_batch("100:200");
  o.initial_batch = 116;
  return o;
}

// Φ every 100 iterations: below γ = 0.1 raises the batch by 10%, above lowers it, at γ holds.
const std::vector<double> kTrace = {0.05, 0.02, 0.3,  0.1,  0.0,  -0.2, 0.01, 0.04, 0.09, 0.5, 0.6,
                                    0.08, 0.07, 0.06, 0.03, 0.9,  0.9,  0.9,  0.9,  0.9,  0.9, 0.9};
// By hand: round(B · 1.1) or round(B · 0.9), clamped to [100, 200].
const std::vector<std::int64_t> kPath = {128, 141, 127, 127, 140, 154, 169, 186, 200, 180, 162,
                                         178, 196, 200, 200, 180, 162, 146, 131, 118, 106, 100};

TEST(AdaptiveBatch, RecordedTraceGivesTheRulesPath) {
  const std::vector<BatchStep> steps = batch_path(trace_options(), kTrace);
  ASSERT_EQ(steps.size(), kPath.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].global_batch, kPath[i]) << "step " << i;
    EXPECT_EQ(steps[i].iteration, 100 * static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(steps[i].similarity, kTrace[i]);
    // JABAS trainer: lr' = lr · sqrt(B'_G / B_ref), B_ref = max(initial, min) = 116
    EXPECT_DOUBLE_EQ(steps[i].lr_scale, std::sqrt(static_cast<double>(kPath[i]) / 116.0)) << "step " << i;
  }
}

// A run stopped after the 8th value and resumed from its checkpoint (iteration, batch)
// takes the same path as one that never stopped.
TEST(AdaptiveBatch, AResumedControllerContinuesThePath) {
  BatchController stopped(trace_options());
  for (std::size_t i = 0; i < 8; ++i) stopped.observe(kTrace[i]);
  BatchController resumed(trace_options());
  resumed.resume(stopped.iteration(), stopped.global_batch());
  EXPECT_DOUBLE_EQ(resumed.lr_scale(), stopped.lr_scale());
  for (std::size_t i = 8; i < kTrace.size(); ++i) {
    const BatchStep s = resumed.observe(kTrace[i]);
    EXPECT_EQ(s.global_batch, kPath[i]) << "step " << i;
    EXPECT_EQ(s.iteration, 100 * static_cast<std::int64_t>(i + 1));
  }
  EXPECT_THROW(resumed.resume(800, 99), Error);   // below MIN
  EXPECT_THROW(resumed.resume(-1, 150), Error);
  // Review of the adaptive code: resumed between adaptation steps (a checkpoint at 850),
  // it counted p from there (950, 1050, ...), and every change fell off the grid morphd
  // reads the interval from. It observes at the next multiple of p, as it would have.
  BatchController between(trace_options());
  between.resume(850, stopped.global_batch());
  EXPECT_EQ(between.observe(kTrace[8]).iteration, 900);
  EXPECT_EQ(between.observe(kTrace[9]).iteration, 1000);
}

TEST(AdaptiveBatch, ClampsToTheRange) {
  BatchControllerOptions o = trace_options();
  BatchController up(o);
  for (int i = 0; i < 20; ++i) up.observe(-1.0);
  EXPECT_EQ(up.global_batch(), 200);
  BatchController down(o);
  for (int i = 0; i < 20; ++i) down.observe(1.0);
  EXPECT_EQ(down.global_batch(), 100);
  EXPECT_DOUBLE_EQ(down.lr_scale(), std::sqrt(100.0 / 116.0));
}

TEST(AdaptiveBatch, SmallBatchStillMoves) {
  BatchControllerOptions o = trace_options();
  o.range = {1, 8};
  o.initial_batch = 2;
  BatchController c(o);
  EXPECT_EQ(c.observe(0.0).global_batch, 3);  // round(2.2) = 2 would stall
  EXPECT_EQ(c.observe(0.0).global_batch, 4);
  EXPECT_EQ(c.observe(0.5).global_batch, 3);
  EXPECT_EQ(c.observe(0.5).global_batch, 2);
  EXPECT_EQ(c.observe(0.5).global_batch, 1);
  EXPECT_EQ(c.observe(0.5).global_batch, 1);
}

TEST(AdaptiveBatch, LinearScalingAndReferenceBatch) {
  BatchControllerOptions o = trace_options();
  o.lr_scaling = LrScaling::linear;
  o.initial_batch = 100;
  o.range = {150, 400};
  EXPECT_THROW(BatchController{o}, Error);  // initial below MIN
  o.initial_batch = 150;
  BatchController c(o);
  EXPECT_EQ(c.reference_batch(), 150);
  EXPECT_EQ(c.observe(0.0).global_batch, 165);
  EXPECT_DOUBLE_EQ(c.lr_scale(), 165.0 / 150.0);
  EXPECT_DOUBLE_EQ(c.lr_scale_for(300), 2.0);
}

std::string error_of(const BatchControllerOptions& o) {
  std::string error;
  EXPECT_FALSE(o.is_valid(&error));
  return error;
}

TEST(AdaptiveBatch, RejectsBadOptions) {
  BatchControllerOptions o = trace_options();
  std::string error;
  EXPECT_TRUE(o.is_valid(&error)) << error;
  o.range = {300, 200};
  o.initial_batch = 250;
  EXPECT_NE(error_of(o).find("MIN 300 exceeds MAX 200"), std::string::npos);
  o = trace_options();
  o.range = {0, 200};
  EXPECT_NE(error_of(o).find("must be positive"), std::string::npos);
  o = trace_options();
  o.adaptive_rate = 0;
  EXPECT_NE(error_of(o).find("adaptive rate 0"), std::string::npos);
  o.adaptive_rate = 1;
  EXPECT_NE(error_of(o).find("adaptive rate 1"), std::string::npos);
  o = trace_options();
  o.interval_iterations = 0;
  EXPECT_NE(error_of(o).find("adaptive interval 0"), std::string::npos);
  o = trace_options();
  o.similarity_target = 1.5;
  EXPECT_NE(error_of(o).find("similarity target 1.5"), std::string::npos);
  o.similarity_target = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of(o).find("similarity target"), std::string::npos);
  o = trace_options();
  o.initial_batch = 250;
  EXPECT_NE(error_of(o).find("initial batch 250 lies outside"), std::string::npos);

  BatchController c(trace_options());
  EXPECT_THROW(c.observe(1.5), Error);
  EXPECT_THROW(c.observe(std::numeric_limits<double>::quiet_NaN()), Error);
  EXPECT_EQ(c.global_batch(), 116);  // a rejected Φ changes nothing
}

TEST(AdaptiveBatch, ParsesTheFlag) {
  const AdaptiveBatchRange r = parse_adaptive_batch("256:32768");
  EXPECT_EQ(r.min_batch, 256);
  EXPECT_EQ(r.max_batch, 32768);
  EXPECT_EQ(parse_adaptive_batch("64:64").max_batch, 64);
  for (const char* bad : {"", "256", "256:", ":512", "0:512", "-1:512", "512:256", "1:2:3", "a:b", "1.5:2"})
    EXPECT_THROW(parse_adaptive_batch(bad), Error) << bad;
  try {
    parse_adaptive_batch("512:256");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--morph-adaptive-batch: '512:256' has MAX below MIN");
  }
}

}  // namespace
}  // namespace morph
