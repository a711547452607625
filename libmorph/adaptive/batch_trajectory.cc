#include "libmorph/adaptive/batch_trajectory.h"

#include <algorithm>
#include <iterator>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

void BatchHistory::add(StepBatch report) {
  const auto [step, batch] = report;
  if (step < 1) throw Error(fmt::format("batch trajectory: step {} must be >= 1", step));
  if (batch < 1) throw Error(fmt::format("batch trajectory: step {} trained {} samples", step, batch));
  if (step < kept_from_) return;  // its run was dropped: reading it would relabel steps not kept
  // The steps after `step` keep their batch: a run of its own from step + 1.
  if (step < last_ && !runs_.empty() && step + 1 >= runs_.begin()->first && !runs_.contains(step + 1))
    runs_[step + 1] = std::prev(runs_.upper_bound(step + 1))->second;
  last_ = std::max(last_, step);
  auto at = runs_.insert_or_assign(step, batch).first;
  if (const auto next = std::next(at); next != runs_.end() && next->second == batch) runs_.erase(next);
  if (at != runs_.begin() && std::prev(at)->second == batch) runs_.erase(at);
  while (runs_.size() > kMaxBatchRuns) {  // one report may add two runs (its step and the one after)
    runs_.erase(runs_.begin());
    kept_from_ = runs_.begin()->first;
  }
}

std::vector<StepBatch> BatchHistory::changes() const {
  std::vector<StepBatch> out;
  for (const auto& [step, batch] : runs_) out.push_back({step, batch});
  if (!out.empty() && out.back().step != last_) out.push_back({last_, out.back().batch});
  return out;
}

namespace {

// p: the greatest common divisor of (change − 1) over the changes, or, where a few changes
// off that grid (a resume from a checkpoint between adaptation steps, a short batch at a
// restart) would bring it down, the largest gcd of all changes but one that still
// divides 9 in 10 of them. Those few are read at the adaptation step they fall in.
std::int64_t adaptation_interval(const std::vector<std::int64_t>& starts) {
  const std::size_t n = starts.size();
  if (n == 0) return 0;
  std::vector<std::int64_t> prefix(n + 1, 0), suffix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = std::gcd(prefix[i], starts[i]);
  for (std::size_t i = n; i-- > 0;) suffix[i] = std::gcd(suffix[i + 1], starts[i]);
  std::vector<std::int64_t> candidates{prefix[n]};
  for (std::size_t i = 0; i < n; ++i) candidates.push_back(std::gcd(prefix[i], suffix[i + 1]));
  std::sort(candidates.begin(), candidates.end(), std::greater<>());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (std::int64_t p : candidates) {
    if (p <= prefix[n]) break;
    const auto on_grid = std::count_if(starts.begin(), starts.end(), [p](std::int64_t s) { return s % p == 0; });
    if (n >= 3 && static_cast<std::size_t>(on_grid) * 10 >= n * 9) return p;
  }
  return prefix[n];
}

}  // namespace

BatchTrajectory batch_trajectory(const BatchHistory& history) {
  const std::vector<StepBatch> changes = history.changes();
  BatchTrajectory out;
  if (changes.empty()) return out;
  std::vector<std::int64_t> starts;  // change − 1 of every change of batch
  for (std::size_t i = 1; i < changes.size(); ++i)
    if (changes[i].batch != changes[i - 1].batch) starts.push_back(changes[i].step - 1);
  out.interval = adaptation_interval(starts);
  if (out.interval == 0) return out;
  // The batch of adaptation step k is that of its first iteration, (k−1)p + 1, or of the
  // latest reported iteration before it; the last step may be under way. Only the latest
  // kMaxAdaptationSteps: the forecaster reads the recent past, and a job of millions of
  // iterations would otherwise cost as many entries every round.
  const std::int64_t last = changes.back().step;
  const std::int64_t steps = (last - 1) / out.interval + 1;
  std::int64_t k = std::max<std::int64_t>(1, steps - kMaxAdaptationSteps + 1);
  for (std::int64_t first = (k - 1) * out.interval + 1; first <= last; first += out.interval, ++k) {
    const auto at = std::upper_bound(changes.begin(), changes.end(), first,
                                     [](std::int64_t s, const StepBatch& c) { return s < c.step; });
    if (at == changes.begin()) continue;  // reports began later than this step
    if (out.batches.empty()) out.first = k;
    out.batches.push_back(static_cast<double>(std::prev(at)->batch));
  }
  return out;
}

BatchTrajectory batch_trajectory(const std::vector<StepBatch>& steps) {
  BatchHistory history;
  for (const StepBatch& s : steps) history.add(s);
  return batch_trajectory(history);
}

}  // namespace morph
