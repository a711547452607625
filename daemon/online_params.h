// The online refit's parameters in the state database (fitted_params, source "online"):
// morphd records each accepted refit, and a restarted morphd takes up the latest one of
// each model, so that what its jobs taught it survives.
#pragma once

#include <map>
#include <string>

#include "daemon/store/state_store.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_params.h"
#include "libmorph/policy/model_refit.h"

namespace morph::daemon {

inline constexpr const char* kOnlineRefitSource = "online";

void record_refit(store::StateStore& state, const policy::ModelRefit& refit, double now_s);

// By catalog model name: the models whose latest fitted parameters are an online refit, as
// it recorded them (parameters, evidence, the prior of its fit).
std::map<std::string, PerfModel> load_online_refits(const store::StateStore& state, const Catalog& catalog);

}  // namespace morph::daemon
