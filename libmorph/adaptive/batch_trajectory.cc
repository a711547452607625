#include "libmorph/adaptive/batch_trajectory.h"

#include <map>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

BatchTrajectory batch_trajectory(const std::vector<StepBatch>& steps) {
  std::map<std::int64_t, std::int64_t> by_step;  // the last report of each step wins
  for (const StepBatch& s : steps) {
    if (s.step < 1) throw Error(fmt::format("batch trajectory: step {} must be >= 1", s.step));
    if (s.batch < 1) throw Error(fmt::format("batch trajectory: step {} trained {} samples", s.step, s.batch));
    by_step[s.step] = s.batch;
  }
  BatchTrajectory out;
  if (by_step.empty()) return out;
  std::int64_t previous = by_step.begin()->second;
  for (const auto& [step, batch] : by_step) {
    if (batch != previous) out.interval = std::gcd(out.interval, step - 1);
    previous = batch;
  }
  if (out.interval == 0) return out;
  // The batch of adaptation step k is that of its first iteration, (k−1)p + 1, or of the
  // latest reported iteration before it; the last step may be under way.
  const std::int64_t last = by_step.rbegin()->first;
  for (std::int64_t first = 1; first <= last; first += out.interval) {
    auto at = by_step.upper_bound(first);
    if (at == by_step.begin()) continue;  // reports began later than this step
    out.batches.push_back(static_cast<double>(std::prev(at)->second));
  }
  return out;
}

}  // namespace morph
