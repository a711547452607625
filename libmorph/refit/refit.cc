#include "libmorph/refit/refit.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

Refit refit_perf_model(const PerfModel& start, const Workload& workload, std::span<const ObservedIteration> observed,
                       const FitOptions& options) {
  const WorkloadIterations group{workload, start.forward, {observed.begin(), observed.end()}};
  return refit_perf_model(start, std::span(&group, 1), options);
}

Refit refit_perf_model(const PerfModel& start, std::span<const WorkloadIterations> groups, const FitOptions& options) {
  if (!(options.prior_weight >= 0) || !std::isfinite(options.prior_weight))
    throw Error(fmt::format("refit: prior weight {} must be a finite number >= 0", options.prior_weight));
  Refit r;
  r.before = start;
  r.after = start;
  for (const WorkloadIterations& g : groups)
    for (const ObservedIteration& o : g.observed) {
      MeasuredPoint p;
      p.terms = iteration_terms(g.workload, o.plan, o.allocation, g.forward);
      p.iter_ms = o.iter_ms;
      p.label = o.source;
      r.points.push_back(std::move(p));
    }
  if (!r.points.empty()) {
    // What the model was fitted on, fitted again beside the observations (PerfModel::evidence).
    std::vector<MeasuredPoint> all = start.evidence ? *start.evidence : FitEvidence{};
    all.insert(all.end(), r.points.begin(), r.points.end());
    // The model's own fit again, the observations added: the prior it was fitted with, or,
    // for a fit without one, the given weight around its parameters, kept for the next
    // refit so that no refit counts its evidence, or its earlier refits, twice.
    r.after.prior = start.prior.weight > 0 ? start.prior : FitPrior{start.params, options.prior_weight};
    FitOptions fit = options;
    fit.prior_weight = r.after.prior.weight;
    fit.prior_centre = r.after.prior.centre;
    r.fit = fit_perf_params(all, fit, start.params);
    r.after.params = r.fit.params;
  }
  for (const MeasuredPoint& p : r.points) {
    r.predicted_before_ms.push_back(predict_iteration(p.terms, r.before.params).iter_ms);
    r.predicted_after_ms.push_back(predict_iteration(p.terms, r.after.params).iter_ms);
  }
  return r;
}

double mean_relative_error(std::span<const double> predicted_ms, std::span<const double> measured_ms) {
  if (predicted_ms.size() != measured_ms.size())
    throw Error(fmt::format("mean relative error: {} predictions for {} measurements", predicted_ms.size(),
                            measured_ms.size()));
  double sum = 0;
  for (std::size_t i = 0; i < measured_ms.size(); ++i) {
    if (!(measured_ms[i] > 0))
      throw Error(fmt::format("mean relative error: measurement {} is {} ms", i, measured_ms[i]));
    sum += std::abs(predicted_ms[i] - measured_ms[i]) / measured_ms[i];
  }
  return measured_ms.empty() ? 0 : sum / static_cast<double>(measured_ms.size());
}

GatedRefit gated_refit(const PerfModel& in_use, std::span<const WorkloadIterations> groups, double threshold,
                       const FitOptions& options) {
  GatedRefit g;
  g.model = in_use;
  std::vector<double> predicted_ms, measured_ms;
  for (const WorkloadIterations& group : groups)
    for (const ObservedIteration& o : group.observed) {
      const IterationTerms terms = iteration_terms(group.workload, o.plan, o.allocation, group.forward);
      predicted_ms.push_back(predict_iteration(terms, in_use.params).iter_ms);
      measured_ms.push_back(o.iter_ms);
    }
  g.error_before = g.error_after = mean_relative_error(predicted_ms, measured_ms);
  if (measured_ms.empty() || g.error_before <= threshold) return g;
  const Refit refit = refit_perf_model(in_use, groups, options);
  g.tried = true;
  g.error_after = mean_relative_error(refit.predicted_after_ms, measured_ms);
  g.rmsle = refit.fit.rmsle;
  std::vector<double> evidence_before, evidence_after, evidence_ms;
  for (const MeasuredPoint& p : in_use.evidence ? *in_use.evidence : FitEvidence{}) {
    evidence_before.push_back(predict_iteration(p.terms, in_use.params).iter_ms);
    evidence_after.push_back(predict_iteration(p.terms, refit.after.params).iter_ms);
    evidence_ms.push_back(p.iter_ms);
  }
  g.evidence_error_before = mean_relative_error(evidence_before, evidence_ms);
  g.evidence_error_after = mean_relative_error(evidence_after, evidence_ms);
  g.accepted = g.error_after < g.error_before &&
               g.evidence_error_after <= std::max(kEvidenceTolerance, g.evidence_error_before);
  if (g.accepted) g.model = refit.after;
  return g;
}

}  // namespace morph
