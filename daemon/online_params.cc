#include "daemon/online_params.h"

#include <cmath>

#include <fmt/format.h>

#include "libmorph/perf/perf_store.h"

namespace morph::daemon {

void record_refit(store::StateStore& state, const policy::ModelRefit& refit, double now_s) {
  state.record_fitted_params({refit.model, perf_model_to_json(refit.model, refit.perf), kOnlineRefitSource,
                              static_cast<std::int64_t>(std::floor(now_s)), refit.rmsle});
}

std::map<std::string, PerfModel> load_online_refits(const store::StateStore& state, const Catalog& catalog) {
  std::map<std::string, PerfModel> refits;
  for (const ModelSpec& model : catalog.models()) {
    const std::optional<store::FittedParams> fit = state.latest_params(model.name);
    if (!fit || fit->source != kOnlineRefitSource) continue;
    refits[model.name] = perf_model_from_json(
        fit->params_json, fmt::format("{}: fitted parameters of {}", state.path(), model.name), nullptr);
  }
  return refits;
}

}  // namespace morph::daemon
