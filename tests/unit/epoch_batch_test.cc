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

// A change off the grid of p (a run resumed from a checkpoint between adaptation steps)
// brought the gcd of all changes down to 1: a history of one entry per iteration, every
// 10 iterations read as an epoch, seconds of work for morphd each round.
TEST(BatchTrajectory, AFewChangesOffTheGridKeepTheInterval) {
  ControllerRun run = controller_run(60, 10, 3);
  run.reported[100].batch += 7;  // step 101 trained another batch than its neighbours
  run.reported[101].batch += 7;  // and 102; back at 103, a change off the grid (102 = 10k + 2)
  const BatchTrajectory t = batch_trajectory(run.reported);
  EXPECT_EQ(t.interval, 10);
  ASSERT_EQ(t.batches.size(), run.batches.size());
  EXPECT_EQ(t.batches[10], run.batches[10] + 7);  // step 101 opens adaptation step 11
  for (std::size_t k = 0; k < run.batches.size(); ++k) {
    if (k != 10) {
      EXPECT_EQ(t.batches[k], run.batches[k]) << k;
    }
  }
  // The reviewer's case: changes at 101, 150 and 151 (gcd 1) and one report at 10^7.
  const BatchTrajectory few = batch_trajectory({{1, 64}, {101, 70}, {150, 32}, {151, 70}, {10'000'000, 70}});
  EXPECT_EQ(few.interval, 1);  // three changes: no majority to trust over the gcd
  EXPECT_EQ(static_cast<std::int64_t>(few.batches.size()), kMaxAdaptationSteps);  // only the latest
  EXPECT_EQ(few.first, 10'000'000 - kMaxAdaptationSteps + 1);
  EXPECT_EQ(few.batches.back(), 70);
}

TEST(BatchTrajectory, AnUnchangedBatchHasNoInterval) {
  const BatchTrajectory t = batch_trajectory({{1, 64}, {2, 64}, {3, 64}});
  EXPECT_EQ(t.interval, 0);
  EXPECT_TRUE(t.batches.empty());
  EXPECT_TRUE(batch_trajectory(std::vector<StepBatch>{}).batches.empty());
  EXPECT_THROW(batch_trajectory({{0, 64}}), Error);
  EXPECT_THROW(batch_trajectory({{1, 0}}), Error);
}

// morphd keeps a job's history as the steps where its batch changed: a million reports
// of a few hundred batches cost a few hundred entries, and read as every report.
TEST(BatchHistory, KeepsTheChangesAndReadsAsEveryReport) {
  const ControllerRun run = controller_run(60, 10, 3);
  std::vector<StepBatch> reported(run.reported.begin(), run.reported.begin() + 300);
  // A restart from the checkpoint of step 250 redoes 251..300, first reported wrongly.
  for (StepBatch& s : reported)
    if (s.step > 250) s.batch += 1;
  reported.insert(reported.end(), run.reported.begin() + 250, run.reported.end());
  BatchHistory history;
  for (const StepBatch& s : reported) history.add(s);
  const std::vector<StepBatch> changes = history.changes();
  EXPECT_LT(changes.size(), run.batches.size() + 2);  // a run per batch, and the last step
  EXPECT_EQ(changes.back().step, 600);
  const BatchTrajectory t = batch_trajectory(history);
  EXPECT_EQ(t.interval, 10);
  EXPECT_EQ(t.first, 1);
  EXPECT_EQ(t.batches, run.batches);
  EXPECT_EQ(batch_trajectory(changes).batches, run.batches);  // the changes read as all the reports
  // Hand-made: 64 for steps 1..4, 80 from 5, step 3 redone at 72, a gap from 9 to 12.
  BatchHistory h;
  for (std::int64_t s = 1; s <= 8; ++s) h.add({s, s <= 4 ? 64 : 80});
  h.add({3, 72});
  h.add({12, 96});
  const std::vector<StepBatch> expected = {{1, 64}, {3, 72}, {4, 64}, {5, 80}, {12, 96}};
  ASSERT_EQ(h.changes().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(h.changes()[i].step, expected[i].step) << i;
    EXPECT_EQ(h.changes()[i].batch, expected[i].batch) << i;
  }
  h.add({3, 64});  // redone again at its first batch: the runs merge back
  EXPECT_EQ(h.changes().size(), 3u);
  EXPECT_THROW(h.add({0, 64}), Error);
  EXPECT_THROW(h.add({1, 0}), Error);
}

// A job that changes its batch every iteration costs morphd kMaxBatchRuns entries, not one
// per iteration, and its trajectory still reads the latest adaptation steps as they were.
TEST(BatchHistory, KeepsTheLatestRunsOnly) {
  BatchHistory history;
  const std::int64_t steps = 3 * static_cast<std::int64_t>(kMaxBatchRuns);
  auto batch_at = [](std::int64_t step) -> std::int64_t { return step % 2 == 0 ? 64 : 96; };
  for (std::int64_t s = 1; s <= steps; ++s) history.add({s, batch_at(s)});
  const std::vector<StepBatch> changes = history.changes();
  ASSERT_EQ(changes.size(), kMaxBatchRuns);  // every step its own run, the last one among them
  EXPECT_EQ(changes.front().step, steps - static_cast<std::int64_t>(kMaxBatchRuns) + 1);
  EXPECT_EQ(changes.back().step, steps);
  const BatchTrajectory t = batch_trajectory(history);
  EXPECT_EQ(t.interval, 1);
  ASSERT_EQ(static_cast<std::int64_t>(t.batches.size()), kMaxAdaptationSteps);
  EXPECT_EQ(t.first, steps - kMaxAdaptationSteps + 1);
  for (std::int64_t k = 0; k < kMaxAdaptationSteps; ++k)
    ASSERT_EQ(t.batches[static_cast<std::size_t>(k)], static_cast<double>(batch_at(t.first + k))) << k;
  // A late report before the runs kept changes nothing.
  history.add({5, 80});
  history.add({changes.front().step - 1, 80});
  EXPECT_EQ(history.changes().size(), changes.size());
  EXPECT_EQ(history.changes().front().step, changes.front().step);
  EXPECT_EQ(history.changes().front().batch, changes.front().batch);
}

// Review of the adaptive code: one report before the last may add two runs (its step and
// the one after it), and only one was trimmed: reports that went back and forth kept
// 116,385 runs against the cap of 32,768.
TEST(BatchHistory, ReportsOutOfOrderStayWithinTheCap) {
  BatchHistory history;
  history.add({1, 1});
  history.add({100000000, 1});
  for (std::int64_t i = 1; i <= 3 * static_cast<std::int64_t>(kMaxBatchRuns); ++i)
    history.add({2 * i, i % 2 == 0 ? 64 : 96});
  EXPECT_LE(history.changes().size(), kMaxBatchRuns + 1);  // the runs and the last step reported
}

// Reports that begin late (morphd read only its newest reports, or started after the job)
// still count epochs from the job's first adaptation step: the decision falls at the same
// step, on the same forecast, as with every report.
TEST(EpochBatch, EpochsCountFromTheJobsFirstStepWhereverReportsBegin) {
  const ControllerRun run = controller_run(40, 10, 7);
  const AdaptiveBatchRange range{64, 1500};
  EpochBatchOptions options;
  options.epoch_steps = 10;
  for (const int adaptations : {20, 25, 29, 30, 34}) {
    const std::vector<StepBatch> all(run.reported.begin(), run.reported.begin() + adaptations * 10);
    const std::vector<StepBatch> late(run.reported.begin() + 73, run.reported.begin() + adaptations * 10);
    const BatchTrajectory t = batch_trajectory(late);
    EXPECT_EQ(t.first, 9);  // step 74 is in adaptation step 8; 9 begins at 81
    const EpochBatch a = epoch_batch(batch_trajectory(all), 64, range, options);
    const EpochBatch b = epoch_batch(t, 64, range, options);
    EXPECT_EQ(b.epochs, adaptations / 10) << adaptations;
    EXPECT_EQ(b.epochs, a.epochs);
    EXPECT_EQ(b.batch, a.batch) << adaptations;
  }
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
