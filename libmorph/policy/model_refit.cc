#include "libmorph/policy/model_refit.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/perf/iteration_time.h"
#include "libmorph/util/error.h"
#include "libmorph/util/median.h"
#include "libmorph/util/parse.h"

namespace morph::policy {

bool RefitOptions::is_valid(std::string* error) const {
  if (!(error_threshold >= 0) || !std::isfinite(error_threshold)) {
    *error = fmt::format("error_threshold {} must be a finite number >= 0", error_threshold);
    return false;
  }
  if (!(prior_weight >= 0) || !std::isfinite(prior_weight)) {
    *error = fmt::format("prior_weight {} must be a finite number >= 0", prior_weight);
    return false;
  }
  if (!(max_age_s >= 0) || !std::isfinite(max_age_s)) {
    *error = fmt::format("max_age_s {} must be a finite number >= 0", max_age_s);
    return false;
  }
  return true;
}

ModelRefitter::ModelRefitter(RefitOptions options) : options_(options) {
  if (std::string error; !options_.is_valid(&error)) throw Error("online refit: " + error);
}

void ModelRefitter::set_options(RefitOptions options) {
  if (std::string error; !options.is_valid(&error)) throw Error("online refit: " + error);
  options_ = options;
}

void ModelRefitter::observe(const ClusterView& view, const std::map<std::string, AppProfile>& apps) {
  for (const JobState& job : view.jobs) {
    // NaN and infinity fail this too: no such point ever reaches a median.
    if (!job.running() || !(job.measured_iteration_s > 0) || !std::isfinite(job.measured_iteration_s)) continue;
    // A job spanning two GPU types runs at its slowest group's pace (hetero_plan.h): not a
    // point of the one-type model the refit fits.
    if (!job.current.groups.empty()) continue;
    const auto known = apps.find(job.app);
    if (known == apps.end())
      throw Error(fmt::format("model refit: job {} is of application {}, which the view has no model of", job.id,
                              quote(job.app)));
    const AppProfile& app = known->second;
    // A job that adapts its batch ran other batches than its plan's: scaled to it
    // (daemon/view_builder.h), its iterations estimate the plan's time, they do not measure it.
    if (app.adaptive_batch) continue;
    RefitPoint point{app.workload.model.name, job.app, job.id, app.workload, app.perf.forward, job.current.plan,
                     to_allocation(view.nodes, job.current.slices), job.measured_iteration_s, view.now_s};
    if (remember(point)) learned_.push_back(std::move(point));
  }
}

std::string configuration_key(const RefitPoint& point) {
  return fmt::format("{} {} on {} ({} CPUs per GPU)", point.app, to_string(point.plan), point.allocation.to_string(),
                     point.allocation.min_cpus_per_gpu());
}

bool ModelRefitter::remember(const RefitPoint& point) {
  const std::string key = configuration_key(point);
  Application& a = observed_[point.model][point.app];
  a.workload = point.workload;
  a.forward = point.forward;
  Configuration& c = a.configurations[key];
  c.plan = point.plan;
  c.allocation = point.allocation;
  auto& m = c.measured;
  const auto same = std::find_if(m.begin(), m.end(), [&](const Measurement& x) { return x.job == point.job; });
  const bool known = same != m.end() && same->iteration_s == point.iteration_s;
  // The store keeps a point's time of writing and expires it after max_age_s: a point a
  // round still sees is written again once half of that has passed.
  const bool stale = known && options_.max_age_s > 0 && point.measured_at_s - same->stored_s >= options_.max_age_s / 2;
  const double stored_s = known && !stale ? same->stored_s : point.measured_at_s;
  if (same != m.end()) m.erase(same);
  m.push_back({point.job, point.iteration_s, point.measured_at_s, stored_s});
  if (m.size() > kJobsPerConfiguration) m.erase(m.begin());
  return !known || stale;
}

void ModelRefitter::forget_older_than(double now_s) {
  if (options_.max_age_s <= 0) return;
  const double cutoff = now_s - options_.max_age_s;
  for (auto& [model, applications] : observed_)
    for (auto& [app, a] : applications) {
      for (auto& [key, c] : a.configurations)
        std::erase_if(c.measured, [&](const Measurement& m) { return m.at_s < cutoff; });
      std::erase_if(a.configurations, [](const auto& entry) { return entry.second.measured.empty(); });
    }
}

void ModelRefitter::restore(const RefitPoint& point) {
  if (point.model.empty() || point.app.empty())
    throw Error(fmt::format("online refit: a remembered point of job {} names no model or application", point.job));
  if (!(point.iteration_s > 0) || !std::isfinite(point.iteration_s))
    throw Error(fmt::format("online refit: job {}'s remembered iteration time {} s must be > 0", point.job,
                            point.iteration_s));
  remember(point);
}

std::map<std::string, std::map<std::string, std::vector<double>>> ModelRefitter::remembered(
    const std::string& model) const {
  std::map<std::string, std::map<std::string, std::vector<double>>> out;
  const auto it = observed_.find(model);
  if (it == observed_.end()) return out;
  for (const auto& [app, a] : it->second)
    for (const auto& [key, c] : a.configurations)
      for (const Measurement& m : c.measured) out[app][key].push_back(m.iteration_s);
  return out;
}

std::vector<ModelRefit> ModelRefitter::round(const ClusterView& view, const std::map<std::string, AppProfile>& apps) {
  std::vector<ModelRefit> refits;
  learned_.clear();
  if (options_.error_threshold <= 0) return refits;
  observe(view, apps);
  forget_older_than(view.now_s);
  for (const auto& [model, applications] : observed_) {
    // The model in use: the same parameters in every application of it; none in the
    // view, no job needs it this round.
    const auto in_use = std::find_if(apps.begin(), apps.end(),
                                     [&](const auto& a) { return a.second.workload.model.name == model; });
    if (in_use == apps.end()) continue;
    ModelRefit r;
    r.model = model;
    r.perf = in_use->second.perf;
    std::vector<WorkloadIterations> groups;
    for (const auto& [app_name, a] : applications) {
      WorkloadIterations group{a.workload, a.forward, {}};
      for (const auto& [key, c] : a.configurations) {
        std::vector<double> measured;
        for (const Measurement& m : c.measured) measured.push_back(m.iteration_s);
        const double measured_ms = median(measured) * 1e3;
        const double predicted_ms =
            predict_iteration(iteration_terms(a.workload, c.plan, c.allocation, a.forward), r.perf.params).iter_ms;
        if (!(measured_ms <= kImplausibleRatio * predicted_ms && predicted_ms <= kImplausibleRatio * measured_ms)) {
          r.implausible.insert(key);
          continue;
        }
        group.observed.push_back(ObservedIteration{c.plan, c.allocation, measured_ms, key});
        r.configurations.insert(key);
      }
      if (!group.observed.empty()) groups.push_back(std::move(group));
    }
    if (groups.empty()) continue;  // everything it measured has expired, or is implausible
    const auto seen = refit_on_.find(model);
    const bool news = seen == refit_on_.end() ||
                      std::any_of(r.configurations.begin(), r.configurations.end(),
                                  [&](const std::string& k) { return !seen->second.count(k); });
    if (!news) continue;
    FitOptions fit;
    fit.prior_weight = options_.prior_weight;
    const GatedRefit refit = gated_refit(r.perf, groups, options_.error_threshold, fit);
    if (!refit.tried) continue;
    refit_on_[model] = r.configurations;
    r.error_before = refit.error_before;
    r.error_after = refit.error_after;
    r.rmsle = refit.rmsle;
    r.evidence_error_before = refit.evidence_error_before;
    r.evidence_error_after = refit.evidence_error_after;
    r.accepted = refit.accepted;
    r.perf = refit.model;  // where kept, with its prior: the next refit's, so that it counts the evidence once
    refits.push_back(std::move(r));
  }
  return refits;
}

void use_refit(std::map<std::string, AppProfile>& apps, const std::string& model, const PerfModel& refit) {
  for (auto& [name, app] : apps)
    if (app.workload.model.name == model) {
      app.perf.params = refit.params;
      app.perf.prior = refit.prior;
    }
}

std::string describe(const ModelRefit& r) {
  const std::size_t n = r.configurations.size();
  const bool better = r.error_after < r.error_before;
  std::string text = fmt::format(
      "refit {}: error {:.1f}% -> {:.1f}% on {} point{}{}", r.model, 100 * r.error_before, 100 * r.error_after, n,
      n == 1 ? "" : "s",
      r.accepted ? ""
      : better   ? fmt::format("; it would miss the model's profile by {:.1f}% (was {:.1f}%), the model stays",
                               100 * r.evidence_error_after, 100 * r.evidence_error_before)
                 : "; not better, the model stays");
  for (const std::string& key : r.implausible)
    text += fmt::format("; left out, {}x off the model or more: {}", kImplausibleRatio, key);
  return text;
}

}  // namespace morph::policy
