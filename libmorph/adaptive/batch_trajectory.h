// A job's global batch at each of its adaptation steps, recovered from what it reported:
// the samples of every iteration (morphrun's metrics, morphd's observations). The batch
// controller (batch_controller.h) changes the batch only after iterations p, 2p, ..., so
// every change begins at an iteration k·p + 1 and p is the greatest common divisor of
// (change − 1) over the changes seen, but for a few off that grid (batch_trajectory.cc).
// This is the history JABAS's forecaster reads
// (seed 004 §6.2: "the GBS at each adaptation step").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace morph {

struct StepBatch {
  std::int64_t step = 0;   // 1-based iteration number
  std::int64_t batch = 0;  // samples that iteration trained
};

// The most adaptation steps a trajectory holds: the latest ones.
inline constexpr std::int64_t kMaxAdaptationSteps = 1 << 14;
// The most runs of one batch a BatchHistory keeps: twice the changes of the adaptation
// steps a trajectory reads.
inline constexpr std::size_t kMaxBatchRuns = 2 * kMaxAdaptationSteps;

struct BatchTrajectory {
  std::int64_t interval = 0;    // p; 0 when the batch never changed (no change, no p)
  std::int64_t first = 1;       // the adaptation step of batches[0] (reports began later)
  std::vector<double> batches;  // at adaptation steps first, first + 1, ...: iterations (k−1)p+1 .. kp
};

// A job's batch per step, fed report by report and kept as the steps where it changes,
// so that a job of millions of iterations costs its changes only, and at most the latest
// kMaxBatchRuns of them, whatever it reports (a job changing its batch every iteration
// grew morphd's memory without bound); a report before those is dropped. A step reported twice
// (redone after a restart from an earlier checkpoint) has the batch reported last; a step
// never reported has the batch of the one before it. (One difference from keeping every
// report: a step reported late into a gap splits the run there, so the unreported steps
// after it keep the batch they had.)
class BatchHistory {
 public:
  void add(StepBatch report);  // throws morph::Error on a step < 1 or a batch < 1
  // Each run's first step and the last step reported: reports that batch_trajectory()
  // reads as it would read all of them.
  std::vector<StepBatch> changes() const;

 private:
  std::map<std::int64_t, std::int64_t> runs_;  // first step -> batch, until the next key
  std::int64_t last_ = 0;
  std::int64_t kept_from_ = 0;  // the first step of the runs kept, once some were dropped
};

BatchTrajectory batch_trajectory(const BatchHistory& history);
// `steps` in report order, as BatchHistory::add() takes them.
BatchTrajectory batch_trajectory(const std::vector<StepBatch>& steps);

}  // namespace morph
