#include "libmorph/artifact/online_refit.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/random_order.h"

namespace morph {
namespace {

// Rows that no fit has seen: measured, not used for fitting, not a profiled configuration.
bool unseen(const ValidatedRow& r) { return r.row.iter_ms > 0 && !r.used_for_fit && !r.profiled; }

ObservedIteration observation_of(const ArtifactRow& row) {
  return ObservedIteration{row.plan, row.allocation, row.iter_ms,
                           fmt::format("{} {},{}", row.source, row.exec_plan, row.placement)};
}

std::string row_name(const ArtifactRow& row) { return row.exec_plan + "," + row.placement; }

// OnlineRefitCurve::fit_floor of `rows`.
double fit_floor(PerfModel fitted, const Workload& job, std::span<const ArtifactRow* const> rows) {
  fitted.evidence = nullptr;  // the model's form on these rows alone, without a prior
  fitted.prior = {};
  std::vector<ObservedIteration> all;
  for (const ArtifactRow* r : rows) all.push_back(observation_of(*r));
  FitOptions fit;
  fit.prior_weight = 0;
  const Refit refit = refit_perf_model(fitted, job, all, fit);
  std::vector<double> measured;
  for (const ArtifactRow* r : rows) measured.push_back(r->iter_ms);
  return level_corrected_error(refit.predicted_after_ms, measured);
}

}  // namespace

double level_corrected_error(std::span<const double> predicted, std::span<const double> measured) {
  if (predicted.size() != measured.size() || predicted.empty())
    throw Error(fmt::format("level correction: {} predictions for {} measurements", predicted.size(), measured.size()));
  auto mean_error = [&](double c) {
    double sum = 0;
    for (std::size_t i = 0; i < measured.size(); ++i) sum += std::abs(c * predicted[i] - measured[i]) / measured[i];
    return sum / static_cast<double>(measured.size());
  };
  double best = mean_error(1.0);
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (!(predicted[i] > 0) || !(measured[i] > 0))
      throw Error(fmt::format("level correction: point {} is not positive ({} predicted, {} measured)", i,
                              predicted[i], measured[i]));
    best = std::min(best, mean_error(measured[i] / predicted[i]));
  }
  return best;
}

bool OnlineRefitOptions::is_valid(std::string* error) const {
  if (!(prior_weight >= 0) || !std::isfinite(prior_weight)) {
    *error = fmt::format("prior weight {} must be a finite number >= 0", prior_weight);
    return false;
  }
  if (!(refit_threshold >= 0) || !std::isfinite(refit_threshold)) {
    *error = fmt::format("refit threshold {} must be a finite number >= 0", refit_threshold);
    return false;
  }
  if (observed_rows < 0) {
    *error = fmt::format("observed rows {} must be >= 0", observed_rows);
    return false;
  }
  if (min_rows <= observed_rows) {
    *error = fmt::format("min rows {} must exceed the observed rows {} (something must be held out)", min_rows,
                         observed_rows);
    return false;
  }
  return true;
}

std::vector<OnlineRefitCurve> online_refit_curves(const WorkloadValidation& v, const OnlineRefitOptions& options) {
  if (std::string error; !options.is_valid(&error)) throw Error("online refit: " + error);
  const Workload job{v.model, v.workload.global_batch, v.workload.seq_len};
  const PerfModel fitted = fitted_perf_model(v);
  std::vector<std::string> families;
  for (const ValidatedRow& r : v.rows)
    if (unseen(r) && std::find(families.begin(), families.end(), r.family) == families.end())
      families.push_back(r.family);

  std::vector<OnlineRefitCurve> curves;
  for (const std::string& family : families) {
    std::vector<const ArtifactRow*> rows;
    for (const ValidatedRow& r : v.rows)
      if (unseen(r) && r.family == family) rows.push_back(&r.row);
    if (static_cast<int>(rows.size()) < options.min_rows) continue;
    if (options.order_seed != 0) {  // each family's rows in their own random order
      std::mt19937_64 generator(stream_seed(options.order_seed, v.workload.name + "/" + family));
      shuffle_front(rows, rows.size(), generator);
    }
    const auto first_held_out = rows.begin() + options.observed_rows;
    OnlineRefitCurve curve;
    curve.workload = v.workload.name;
    curve.family = family;
    curve.held_out = static_cast<int>(rows.end() - first_held_out);
    std::vector<ObservedIteration> observed;
    for (auto it = rows.begin(); it != first_held_out; ++it) {
      observed.push_back(observation_of(**it));
      curve.observed.push_back(row_name(**it));
    }
    std::vector<double> measurements;
    for (auto it = first_held_out; it != rows.end(); ++it) measurements.push_back((*it)->iter_ms);
    PerfModel in_use = fitted;
    for (int n = 0; n <= options.observed_rows; ++n) {
      if (n > 0) {  // as morphd after each report: every row observed so far
        FitOptions fit;
        fit.prior_weight = options.prior_weight;
        const WorkloadIterations seen{job, fitted.forward, {observed.begin(), observed.begin() + n}};
        in_use = gated_refit(in_use, std::span(&seen, 1), options.refit_threshold, fit).model;
      }
      double max = 0;
      std::vector<double> predictions;
      for (auto it = first_held_out; it != rows.end(); ++it) {
        const ArtifactRow& r = **it;
        const IterationTerms terms = iteration_terms(job, r.plan, r.allocation, in_use.forward);
        predictions.push_back(predict_iteration(terms, in_use.params).iter_ms);
        max = std::max(max, std::abs(predictions.back() - r.iter_ms) / r.iter_ms);
      }
      curve.avg_error.push_back(mean_relative_error(predictions, measurements));
      curve.max_error.push_back(max);
      if (n == 0) curve.level_floor = level_corrected_error(predictions, measurements);
    }
    curve.fit_floor = fit_floor(fitted, job, std::span(first_held_out, rows.end()));
    curves.push_back(std::move(curve));
  }
  return curves;
}

bool halved(const OnlineRefitCurve& c) { return c.avg_error.back() <= 0.5 * c.avg_error.front(); }

std::vector<OnlineRefitModel> online_refit_by_model(std::span<const OnlineRefitCurve> curves) {
  std::vector<OnlineRefitModel> models;
  for (const OnlineRefitCurve& c : curves) {
    if (models.empty() || models.back().workload != c.workload) models.push_back({c.workload});
    OnlineRefitModel& m = models.back();
    ++m.families;
    m.halved += halved(c);
    m.held_out += c.held_out;
    m.avg_error_before += c.held_out * c.avg_error.front();
    m.avg_error_after += c.held_out * c.avg_error.back();
  }
  for (OnlineRefitModel& m : models) {
    m.avg_error_before /= std::max(m.held_out, 1);
    m.avg_error_after /= std::max(m.held_out, 1);
  }
  return models;
}

OnlineRefitReport online_refit(const std::vector<WorkloadValidation>& workloads, const OnlineRefitOptions& options) {
  OnlineRefitReport report;
  report.options = options;
  for (const WorkloadValidation& v : workloads)
    for (OnlineRefitCurve& c : online_refit_curves(v, options)) {
      report.halved += halved(c);
      if (c.level_floor <= 0.5 * c.avg_error.front()) ++report.halvable;
      if (c.fit_floor <= 0.5 * c.avg_error.front()) ++report.halvable_by_fit;
      report.curves.push_back(std::move(c));
    }
  return report;
}

}  // namespace morph
