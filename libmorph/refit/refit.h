// Online refit (Morphling §4): a saved performance model, refitted to the iterations its
// jobs reported together with the points it was fitted on (PerfModel::evidence), with the
// log-normal prior of that fit (PerfModel::prior), so that a few observations move the
// model only as far as they must and leave what its profile settled: the model's own fit
// again, the observations added. The same function serves morph fit
// --warm-start, the artifact's online-refit curve (libmorph/artifact/online_refit.h) and
// morphd (libmorph/policy/model_refit.h).
#pragma once

#include <span>
#include <vector>

#include "libmorph/perf/fit.h"
#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_model.h"
#include "libmorph/refit/observed_iterations.h"

namespace morph {

struct Refit {
  PerfModel before;
  PerfModel after;                   // before.forward with the refitted parameters
  FitResult fit;                     // empty when nothing was observed; evidence first, then points
  std::vector<MeasuredPoint> points; // one per observation, terms under before.forward
  std::vector<double> predicted_before_ms;
  std::vector<double> predicted_after_ms;
};

// Refits `start.params` to `observed` and `start.evidence` (nothing observed: `after` is
// `start`) under `start.prior`, or, where its fit had none (a profile's, or parameters
// saved without their fit), options.prior_weight around `start.params`; `after.prior`
// keeps it for the next refit. The forward model and the evidence are kept: iteration
// times inform the parameters, not the forward profile, and the observations are not
// evidence, since the jobs that measured them report them again. So a refit of a refit,
// given all the observations, is one refit of `start`. Throws on a negative or
// non-finite options.prior_weight.
Refit refit_perf_model(const PerfModel& start, const Workload& workload, std::span<const ObservedIteration> observed,
                       const FitOptions& options);

// Iterations of one workload of a model, with the forward model that predicts it.
struct WorkloadIterations {
  Workload workload;
  ForwardModel forward;
  std::vector<ObservedIteration> observed;
};

// The same refit of one model's parameters from several of its workloads at once (a model
// "can be reused across jobs with the same model architecture but possibly different
// hyper-parameters", Morphling §4): morphd refits from all the jobs of a model. Points
// follow the groups' order; `start.forward` stays in `after`.
Refit refit_perf_model(const PerfModel& start, std::span<const WorkloadIterations> groups, const FitOptions& options);

// Mean |predicted - measured| / measured over the points; 0 for none. Throws when the
// sizes differ or a measurement is not positive.
double mean_relative_error(std::span<const double> predicted_ms, std::span<const double> measured_ms);

// A refit under morphd's rule (Morphling A.3: the model "can also be updated online ...
// when the prediction error exceeds a threshold"): `in_use` is refitted to `groups` only
// where it mispredicts them by more than `threshold` (their mean relative error), and the
// refit is kept only where it predicts them better and still predicts what the model was
// fitted on (its evidence, the profile) within kEvidenceTolerance, or no worse than before: one
// application's reports, all off alike, would else drag every job's predictions of the
// model (once they outnumber the profile's points, soft-L1 takes those for the outliers). morphd (libmorph/policy/model_refit.h) and the
// artifact's online-refit curve (libmorph/artifact/online_refit.h) decide by it.
// The mean relative error on its own evidence that a kept refit may reach: on the
// artifact's online curves (make check-fidelity) every refit that predicted its new rows
// better missed the profile by 14.5% at most; ten reports of one application all 3x off
// moved it 40-140% off.
inline constexpr double kEvidenceTolerance = 0.2;

struct GatedRefit {
  PerfModel model;          // in use after the decision: the refit where kept, else `in_use`
  double error_before = 0;  // over the observations, by `in_use`
  double error_after = 0;   // by the refit; error_before where none was tried
  double rmsle = 0;         // of the refit's fit
  double evidence_error_before = 0;  // over `in_use`'s evidence, by `in_use`
  double evidence_error_after = 0;   // by the refit
  bool tried = false;       // error_before exceeded the threshold
  bool accepted = false;    // the refit predicts the observations better, and its evidence within bounds
};
GatedRefit gated_refit(const PerfModel& in_use, std::span<const WorkloadIterations> groups, double threshold,
                       const FitOptions& options);

}  // namespace morph
