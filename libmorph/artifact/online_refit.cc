#include "libmorph/artifact/online_refit.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

// Rows that no fit has seen: measured, not used for fitting, not a profiled configuration.
bool unseen(const ValidatedRow& r) { return r.row.iter_ms > 0 && !r.used_for_fit && !r.profiled; }

ObservedIteration observation_of(const ArtifactRow& row) {
  return ObservedIteration{row.plan, row.allocation, row.iter_ms,
                           fmt::format("{} {},{}", row.source, row.exec_plan, row.placement)};
}

std::string row_name(const ArtifactRow& row) { return row.exec_plan + "," + row.placement; }

}  // namespace

bool OnlineRefitOptions::is_valid(std::string* error) const {
  if (!(prior_weight >= 0) || !std::isfinite(prior_weight)) {
    *error = fmt::format("prior weight {} must be a finite number >= 0", prior_weight);
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
  const PerfModel fitted{v.forward, v.fit.params};
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
    for (int n = 0; n <= options.observed_rows; ++n) {
      FitOptions fit;
      fit.prior_weight = options.prior_weight;
      const Refit refit = refit_perf_model(fitted, job, std::span(observed).first(static_cast<std::size_t>(n)), fit);
      double sum = 0, max = 0;
      for (auto it = first_held_out; it != rows.end(); ++it) {
        const ArtifactRow& r = **it;
        const IterationTerms terms = iteration_terms(job, r.plan, r.allocation, refit.after.forward);
        const double predicted = predict_iteration(terms, refit.after.params).iter_ms;
        const double error = std::abs(predicted - r.iter_ms) / r.iter_ms;
        sum += error;
        max = std::max(max, error);
      }
      curve.avg_error.push_back(sum / curve.held_out);
      curve.max_error.push_back(max);
    }
    curves.push_back(std::move(curve));
  }
  return curves;
}

OnlineRefitReport online_refit(const std::vector<WorkloadValidation>& workloads, const OnlineRefitOptions& options) {
  OnlineRefitReport report;
  report.options = options;
  for (const WorkloadValidation& v : workloads)
    for (OnlineRefitCurve& c : online_refit_curves(v, options)) {
      if (c.avg_error.back() <= 0.5 * c.avg_error.front()) ++report.halved;
      report.curves.push_back(std::move(c));
    }
  return report;
}

}  // namespace morph
