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
  // The steps after `step` keep their batch: a run of its own from step + 1.
  if (step < last_ && !runs_.empty() && step + 1 >= runs_.begin()->first && !runs_.contains(step + 1))
    runs_[step + 1] = std::prev(runs_.upper_bound(step + 1))->second;
  last_ = std::max(last_, step);
  auto at = runs_.insert_or_assign(step, batch).first;
  if (const auto next = std::next(at); next != runs_.end() && next->second == batch) runs_.erase(next);
  if (at != runs_.begin() && std::prev(at)->second == batch) runs_.erase(at);
}

std::vector<StepBatch> BatchHistory::changes() const {
  std::vector<StepBatch> out;
  for (const auto& [step, batch] : runs_) out.push_back({step, batch});
  if (!out.empty() && out.back().step != last_) out.push_back({last_, out.back().batch});
  return out;
}

BatchTrajectory batch_trajectory(const BatchHistory& history) {
  const std::vector<StepBatch> changes = history.changes();
  BatchTrajectory out;
  if (changes.empty()) return out;
  for (std::size_t i = 1; i < changes.size(); ++i)
    if (changes[i].batch != changes[i - 1].batch) out.interval = std::gcd(out.interval, changes[i].step - 1);
  if (out.interval == 0) return out;
  // The batch of adaptation step k is that of its first iteration, (k−1)p + 1, or of the
  // latest reported iteration before it; the last step may be under way.
  const std::int64_t last = changes.back().step;
  std::int64_t k = 1;
  for (std::int64_t first = 1; first <= last; first += out.interval, ++k) {
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
