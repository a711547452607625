// What morphd forecasts an adaptive job's batch from (libmorph/adaptive): the batch at each
// adaptation step recovered from the iterations a trainer reported, and the batch the next
// epoch is planned for (seed 004 §6.3).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "libmorph/adaptive/batch_controller.h"
#include "libmorph/adaptive/batch_trajectory.h"
#include "libmorph/adaptive/epoch_batch.h"
#include "libmorph/util/error.h"

namespace morph {
namespace {

// A controller's run as its trainer reports it: one (step, samples) per iteration, the
// batch changing after every `p` iterations by the rule on a seeded similarity trace that
// mostly lies below γ (the batch grows, now and then it falls, and it meets MAX).
struct ControllerRun {
  std::vector<StepBatch> reported;
  std::vector<double> batches;  // at each adaptation step
};

ControllerRun controller_run(int adaptations, int p, std::uint64_t seed) {
  BatchControllerOptions o;
  o.interval_iterations = p;
  o.range = {64, 1500};
  o.initial_batch = 64;
  BatchController c(o);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> similarity(-0.1, 0.15);
  ControllerRun run;
  std::int64_t step = 0;
  for (int k = 0; k < adaptations; ++k) {
    run.batches.push_back(static_cast<double>(c.global_batch()));
    for (int i = 0; i < p; ++i) run.reported.push_back({++step, c.global_batch()});
    c.observe(similarity(rng));
  }
  return run;
}

TEST(BatchTrajectory, RecoversTheControllersStepsFromItsIterations) {
  const ControllerRun run = controller_run(60, 10, 3);
  ASSERT_EQ(run.batches.back(), 1500) << "the trace should reach MAX and stay a while (clamped steps)";
  const BatchTrajectory t = batch_trajectory(run.reported);
  EXPECT_EQ(t.interval, 10);
  EXPECT_EQ(t.batches, run.batches);
}

TEST(BatchTrajectory, AStepRedoneAfterARestartCountsAsReportedLast) {
  ControllerRun run = controller_run(8, 5, 1);
  // A restart from the checkpoint of step 20: steps 21..30 once more, the first time
  // reported with a wrong batch (which must not count).
  std::vector<StepBatch> reported(run.reported.begin(), run.reported.begin() + 30);
  for (StepBatch& s : reported)
    if (s.step > 20) s.batch += 1;
  reported.insert(reported.end(), run.reported.begin() + 20, run.reported.end());
  const BatchTrajectory t = batch_trajectory(reported);
  EXPECT_EQ(t.interval, 5);
  EXPECT_EQ(t.batches, run.batches);
}

TEST(BatchTrajectory, AnUnchangedBatchHasNoInterval) {
  const BatchTrajectory t = batch_trajectory({{1, 64}, {2, 64}, {3, 64}});
  EXPECT_EQ(t.interval, 0);
  EXPECT_TRUE(t.batches.empty());
  EXPECT_TRUE(batch_trajectory({}).batches.empty());
  EXPECT_THROW(batch_trajectory({{0, 64}}), Error);
  EXPECT_THROW(batch_trajectory({{1, 0}}), Error);
}

TEST(EpochBatch, PlannableBatchesKeepFourSignificantBits) {
  const AdaptiveBatchRange range{1, 1 << 20};
  EXPECT_EQ(plannable_batch(15.4, range), 15);
  EXPECT_EQ(plannable_batch(148, range), 144);
  EXPECT_EQ(plannable_batch(1000, range), 1024);
  EXPECT_EQ(plannable_batch(1000, {64, 900}), 900);  // the bounds win
  EXPECT_EQ(plannable_batch(1000, range) % 64, 0);
  EXPECT_THROW(plannable_batch(0.5, range), Error);
}

TEST(EpochBatch, ForecastsOnlyFromWholeEpochsAndHoldsWithinOne) {
  const ControllerRun run = controller_run(40, 10, 7);
  const AdaptiveBatchRange range{64, 1500};
  EpochBatchOptions options;
  options.epoch_steps = 10;
  auto after = [&](int adaptations) {
    const std::vector<StepBatch> seen(run.reported.begin(), run.reported.begin() + adaptations * 10);
    return epoch_batch(batch_trajectory(seen), 64, range, options);
  };
  const EpochBatch early = after(9);
  EXPECT_FALSE(early.forecast);
  EXPECT_EQ(early.batch, 64);
  const EpochBatch first = after(10), within = after(17), second = after(20);
  ASSERT_TRUE(first.forecast);
  EXPECT_EQ(first.epochs, 1);
  EXPECT_EQ(first.batches.size(), 10u);
  EXPECT_EQ(within.batch, first.batch);  // a partial epoch changes nothing
  EXPECT_EQ(within.batches, first.batches);
  EXPECT_EQ(second.epochs, 2);
  // The batch grows through these epochs: each plan is above the last batch its forecast saw.
  EXPECT_GT(static_cast<double>(first.batch), run.batches[9]);
  EXPECT_GT(static_cast<double>(second.batch), run.batches[19]);
  EXPECT_GT(second.batch, first.batch);
  EXPECT_EQ(second.batch, plannable_batch(static_cast<double>(second.batch), range));
}

TEST(EpochBatch, RefusesAStartOutsideTheRange) {
  EXPECT_THROW(epoch_batch({}, 32, {64, 128}, {}), Error);
  EpochBatchOptions bad;
  bad.epoch_steps = 0;
  EXPECT_THROW(epoch_batch({}, 64, {64, 128}, bad), Error);
}

}  // namespace
}  // namespace morph
