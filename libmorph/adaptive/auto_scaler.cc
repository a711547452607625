#include "libmorph/adaptive/auto_scaler.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "libmorph/util/error.h"

namespace morph {

bool AutoScaleOptions::is_valid(std::string* error) const {
  if (interval_iterations < 1) {
    *error = fmt::format("adaptive interval {} must be >= 1 iteration", interval_iterations);
    return false;
  }
  if (!(cost_slack >= 0) || !std::isfinite(cost_slack)) {
    *error = fmt::format("cost slack {} must be a finite number >= 0", cost_slack);
    return false;
  }
  return true;
}

AllocationChoice choose_allocation(const std::vector<std::vector<HeteroConfig>>& configs_by_step,
                                   const AutoScaleOptions& options) {
  std::vector<const std::vector<HeteroConfig>*> steps;
  for (const std::vector<HeteroConfig>& step : configs_by_step) steps.push_back(&step);
  return choose_allocation(steps, options);
}

AllocationChoice choose_allocation(const std::vector<const std::vector<HeteroConfig>*>& configs_by_step,
                                   const AutoScaleOptions& options) {
  if (std::string error; !options.is_valid(&error)) throw Error("auto-scaling: " + error);
  if (configs_by_step.empty()) throw Error("auto-scaling: no forecast steps");
  const std::vector<HeteroConfig>& first = *configs_by_step.front();
  std::vector<double> epoch_s(first.size(), 0.0);
  for (std::size_t t = 0; t < configs_by_step.size(); ++t) {
    const std::vector<HeteroConfig>& step = *configs_by_step[t];
    if (step.size() != first.size())
      throw Error(fmt::format("auto-scaling: step {} has {} allocations, step 0 has {}", t, step.size(),
                              first.size()));
    for (std::size_t s = 0; s < step.size(); ++s) {
      if (&step != &first && (step[s].servers != first[s].servers || step[s].server_gpus != first[s].server_gpus))
        throw Error(fmt::format("auto-scaling: step {} lists allocation {} where step 0 lists {}", t,
                                allocation_name(step[s]), allocation_name(first[s])));
      // §6.3: epoch time = Σ over the trajectory of p · t_iter(best configuration at B_G)
      epoch_s[s] += step[s].feasible() ? options.interval_iterations * step[s].iter_ms / 1e3
                                       : std::numeric_limits<double>::infinity();
    }
  }
  double fastest = std::numeric_limits<double>::infinity();
  for (double e : epoch_s) fastest = std::min(fastest, e);
  if (!std::isfinite(fastest))
    throw Error(fmt::format("auto-scaling: no allocation runs all {} forecast batches", configs_by_step.size()));
  std::size_t best = first.size();
  for (std::size_t s = 0; s < first.size(); ++s) {
    if (!(epoch_s[s] <= fastest * (1 + options.cost_slack))) continue;
    if (best == first.size() || first[s].gpus < first[best].gpus ||
        (first[s].gpus == first[best].gpus && epoch_s[s] < epoch_s[best]))
      best = s;
  }
  return AllocationChoice{best, first[best].servers, first[best].server_gpus, first[best].gpus, epoch_s[best], fastest};
}

}  // namespace morph
