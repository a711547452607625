// Validation of the iteration-time model against the Morphling artifact (paper Table 2):
// fit each workload on its profile (plus K trace rows chosen by a fixed rule), predict
// every other trace row, and report relative errors per plan family.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/artifact/artifact_rows.h"
#include "libmorph/artifact/artifact_spec.h"
#include "libmorph/cluster/allocation.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/fit.h"
#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_model.h"

namespace morph {

struct ValidationOptions {
  int extra_rows = 0;      // K trace rows per workload added to the fitting set
  bool in_sample = false;  // fit on every trace row too (the model's floor, not a prediction)
  double prior_weight = kDefaultPriorWeight;  // FitOptions::prior_weight of fits that include trace rows
  bool paper_scope = false;   // fit and score only the configurations of the paper's Table 2
  // Nonzero: the K extra rows are drawn at random, with this seed, among the rule's
  // candidates instead of chosen by the rule (random_extra_rows): how much the figures
  // owe to which rows were fitted.
  std::uint64_t random_rows_seed = 0;
};

struct ValidatedRow {
  ArtifactRow row;
  std::string family;       // plan_family()
  double predicted_ms = 0;
  double error = 0;         // |predicted - measured| / measured
  bool used_for_fit = false;
  bool profiled = false;    // the same configuration is a profile run
  std::string violation;    // why Morph would not run this plan (plan_violation)
  bool in_scope = true;     // a candidate for fitting and scoring (paper_scope)
  bool scored = false;      // counted in the report's errors
};

struct WorkloadValidation {
  ArtifactWorkload workload;
  ModelSpec model;
  ForwardModel forward;
  FitResult fit;            // fit.params are the parameters used
  FitPrior prior;           // the prior of the fit (weight 0: none)
  bool fitted = false;      // false: no usable points, defaults used
  std::vector<MeasuredPoint> points;  // the fitting set, in fit.rel_errors order
  std::vector<ValidatedRow> rows;
  std::vector<std::string> notes;
};

struct FamilyError {
  std::string workload;
  std::string family;
  int points = 0;
  double avg = 0;
  double max = 0;
  std::string worst;  // exec_plan,placement of the largest error
};

struct ValidationReport {
  ValidationOptions options;
  std::vector<WorkloadValidation> workloads;
  std::vector<FamilyError> families;
  int points = 0;  // rows with an error (measured, not used for fitting, not profiled)
  double avg = 0;
  double max = 0;
  int feasibility_rows = 0;   // rows where Morph's verdict (runs / cannot run) is checked
  int feasibility_agree = 0;
  std::vector<std::string> notes;
};

// The configurations Table 2 of the paper reports (seed 000, §7.2): "for models with
// fewer than 1B parameters, we predict DP, GC, ZeRO-DP+GA, and ZeRO-Offload using 1 to 8
// GPUs" (one server of its testbed); "for larger models, we also predict 3D parallelism
// with changing DP/TP/PP sizes using more GPUs", every placement.
bool in_paper_scope(const ModelSpec& model, const Allocation& allocation);

// K extra rows, chosen deterministically and blind to their measurements: the rows the
// profile's own fit predicts least surely (most_informative(), the prior of the fits
// with extra rows), each chosen after those before it. Only measured, not profiled rows
// in scope of plans Morph would run (no violation) are candidates: morphd observes no
// others, and a model fitted on them misleads the plans it does run. `row_terms` are
// the rows' iteration terms; returns indices into `rows`.
std::vector<std::size_t> select_extra_rows(const std::vector<ValidatedRow>& rows,
                                           const std::vector<IterationTerms>& row_terms,
                                           const std::vector<MeasuredPoint>& profile_points,
                                           const PerfParams& profile_fit, double prior_weight, int k);

// K of the rows select_extra_rows() may choose, drawn uniformly without replacement by a
// generator seeded with `seed` (reproducible with the same standard library).
std::vector<std::size_t> random_extra_rows(const std::vector<ValidatedRow>& rows, std::uint64_t seed, int k);

// Fits one workload on `profile_dir` (config.csv + data.csv) plus K rows of `trace_files`,
// and predicts every trace row.
WorkloadValidation fit_workload(const std::string& profile_dir, const std::vector<std::string>& trace_files,
                                const ArtifactWorkload& workload, const ArtifactSpec& spec, const Catalog& catalog,
                                const MorphConfig& config, const ValidationOptions& options);

// The model `v` fitted: its forward model, parameters and points (PerfModel::evidence;
// none when it fell back to the defaults).
PerfModel fitted_perf_model(const WorkloadValidation& v);

ValidationReport validate_artifact(const std::string& artifact_dir, const ArtifactSpec& spec,
                                   const Catalog& catalog, const MorphConfig& config,
                                   const ValidationOptions& options);

}  // namespace morph
