#include "daemon/model_refit.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/perf/iteration_time.h"
#include "libmorph/util/error.h"
#include "libmorph/util/median.h"

namespace morph::daemon {
namespace {

// One configuration of one application and what the jobs running it measured.
struct Point {
  const policy::AppProfile* app = nullptr;
  ExecutionPlan plan;
  Allocation allocation;
  std::vector<double> measured_s;  // one per job
};

// Per model, per application (in name order), per configuration.
using Points = std::map<std::string, std::map<std::string, std::map<std::string, Point>>>;

Points measured_points(const BuiltView& built) {
  Points points;
  for (const policy::JobState& job : built.view.jobs) {
    const auto m = built.measured.find(job.id);
    if (!job.running() || m == built.measured.end() || m->second.iteration_s <= 0) continue;
    // A job spanning two GPU types runs at its slowest group's pace (hetero_plan.h): not a
    // point of the one-type model the refit fits.
    if (!job.current.groups.empty()) continue;
    const policy::AppProfile& app = built.apps.at(job.app);
    // A job that adapts its batch ran other batches than its plan's: scaled to it
    // (view_builder.h), its iterations estimate the plan's time, they do not measure it.
    if (app.adaptive_batch) continue;
    const Allocation allocation = policy::to_allocation(built.view.nodes, job.current.slices);
    const std::string key = fmt::format("{} {} on {} ({} CPUs per GPU)", job.app, to_string(job.current.plan),
                                        allocation.to_string(), allocation.min_cpus_per_gpu());
    Point& p = points[app.workload.model.name][job.app][key];
    p.app = &app;
    p.plan = job.current.plan;
    p.allocation = allocation;
    p.measured_s.push_back(m->second.iteration_s);
  }
  return points;
}

}  // namespace

bool RefitOptions::is_valid(std::string* error) const {
  if (!(error_threshold >= 0) || !std::isfinite(error_threshold)) {
    *error = fmt::format("error_threshold {} must be a finite number >= 0", error_threshold);
    return false;
  }
  if (!(prior_weight >= 0) || !std::isfinite(prior_weight)) {
    *error = fmt::format("prior_weight {} must be a finite number >= 0", prior_weight);
    return false;
  }
  return true;
}

std::vector<ModelRefit> refit_models(const BuiltView& built, const RefitOptions& options,
                                     const std::map<std::string, std::set<std::string>>& refit_on) {
  if (std::string error; !options.is_valid(&error)) throw Error("online refit: " + error);
  std::vector<ModelRefit> refits;
  if (options.error_threshold <= 0) return refits;
  for (const auto& [model, apps] : measured_points(built)) {
    ModelRefit r;
    r.model = model;
    r.perf = apps.begin()->second.begin()->second.app->perf;  // one model: the same parameters in every application
    std::vector<WorkloadIterations> groups;
    for (const auto& [app_name, configurations] : apps) {
      const policy::AppProfile& app = *configurations.begin()->second.app;
      WorkloadIterations group{app.workload, app.perf.forward, {}};
      for (const auto& [key, p] : configurations) {
        group.observed.push_back(ObservedIteration{p.plan, p.allocation, median(p.measured_s) * 1e3, key});
        r.configurations.insert(key);
      }
      groups.push_back(std::move(group));
    }
    const auto seen = refit_on.find(model);
    const bool news = seen == refit_on.end() ||
                      std::any_of(r.configurations.begin(), r.configurations.end(),
                                  [&](const std::string& k) { return !seen->second.count(k); });
    if (!news) continue;
    FitOptions fit;
    fit.prior_weight = options.prior_weight;
    const GatedRefit refit = gated_refit(r.perf, groups, options.error_threshold, fit);
    if (!refit.tried) continue;
    r.error_before = refit.error_before;
    r.error_after = refit.error_after;
    r.rmsle = refit.rmsle;
    r.accepted = refit.accepted;
    r.perf = refit.model;  // where kept, with its prior: the next refit's, so that it counts the evidence once
    refits.push_back(std::move(r));
  }
  return refits;
}

std::string describe(const ModelRefit& r) {
  const std::size_t n = r.configurations.size();
  return fmt::format("refit {}: error {:.1f}% -> {:.1f}% on {} point{}{}", r.model, 100 * r.error_before,
                     100 * r.error_after, n, n == 1 ? "" : "s", r.accepted ? "" : "; not better, the model stays");
}

}  // namespace morph::daemon
