#include "libmorph/artifact/validation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "libmorph/perf/informative_points.h"
#include "libmorph/planner/plan_search.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/random_order.h"

namespace morph {
namespace {

// A profile of another model (the artifact's llama30b profile is a copy of llama7b's):
// its sizes differ from the catalog's by more than this.
constexpr double kOtherModelTolerance = 0.10;

Workload job_of(const ModelSpec& model, std::int64_t batch, std::int64_t seq) {
  return Workload{model, batch, seq};
}

// The same run as a profiled one: CPU threads matter only where the CPUs do the update.
bool same_configuration(const ArtifactRow& a, const ArtifactRow& b) {
  return a.exec_plan == b.exec_plan && a.placement == b.placement &&
         (!a.plan.offload || a.allocation.min_cpus_per_gpu() == b.allocation.min_cpus_per_gpu());
}

// The parts of a profiled iteration are used only when they can be parts of it: together
// at most the iteration (1 ms of rounding per part), each at least 1% of it (the
// artifact's LLaMA profile records a 1 ms optimizer step in a 9.4 s offloading
// iteration whose other parts already exceed it).
bool parts_consistent(const ArtifactRow& row) {
  const double parts = row.forward_ms + row.backward_sync_ms + row.optimizer_ms;
  const double least = 0.01 * row.iter_ms;
  return parts <= row.iter_ms + 3 && row.forward_ms >= least && row.backward_sync_ms >= least &&
         row.optimizer_ms >= least;
}

MeasuredPoint measured_point(const ArtifactRow& row, const Workload& job, const ForwardModel& forward,
                             bool with_parts) {
  MeasuredPoint p;
  p.terms = iteration_terms(job, row.plan, row.allocation, forward);
  p.iter_ms = row.iter_ms;
  if (with_parts && parts_consistent(row)) {
    p.backward_sync_ms = row.backward_sync_ms;
    p.optimizer_ms = row.optimizer_ms;
  }
  p.label = fmt::format("{} {},{}", row.source, row.exec_plan, row.placement);
  return p;
}

// A row morphd could have observed: it ran, repeats no profile run, is in scope, and is
// a plan Morph would run there.
bool extra_row_candidate(const ValidatedRow& r) {
  return r.row.iter_ms > 0 && !r.profiled && r.in_scope && r.violation.empty();
}

}  // namespace

std::vector<std::size_t> random_extra_rows(const std::vector<ValidatedRow>& rows, std::uint64_t seed, int k) {
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (extra_row_candidate(rows[i])) candidates.push_back(i);
  std::mt19937_64 generator(seed);
  const std::size_t n = std::min(candidates.size(), static_cast<std::size_t>(std::max(0, k)));
  shuffle_front(candidates, n, generator);
  candidates.resize(n);
  return candidates;
}

std::vector<std::size_t> select_extra_rows(const std::vector<ValidatedRow>& rows,
                                           const std::vector<IterationTerms>& row_terms,
                                           const std::vector<MeasuredPoint>& profile_points,
                                           const PerfParams& profile_fit, double prior_weight, int k) {
  std::vector<bool> eligible;
  for (const ValidatedRow& r : rows) eligible.push_back(extra_row_candidate(r));
  std::vector<IterationTerms> fitted;
  for (const MeasuredPoint& p : profile_points) fitted.push_back(p.terms);
  return most_informative(fitted, row_terms, eligible, profile_fit, prior_weight, k);
}

WorkloadValidation fit_workload(const std::string& profile_dir, const std::vector<std::string>& trace_files,
                                const ArtifactWorkload& w, const ArtifactSpec& spec, const Catalog& catalog,
                                const MorphConfig& config, const ValidationOptions& options) {
  WorkloadValidation v;
  v.workload = w;
  v.model = catalog.resolve(w.model, fmt::format("artifact workload {}", w.name));
  const Workload job = job_of(v.model, w.global_batch, w.seq_len);
  const Workload profile_job = job_of(v.model, w.profile_global_batch, w.seq_len);
  std::vector<ArtifactRow> profile = read_profile(profile_dir, w, spec, config.cluster);
  const NodeType* node = config.cluster.find_node_type(profile.front().node_type);
  if (node == nullptr) throw Error(fmt::format("the configuration has no NodeType {}", quote(profile.front().node_type)));
  const double reference_speed = config.cluster.gpu_of(*node).speed;
  // The files do not record micro-batch sizes: a run used the workload's micro-batch, or
  // the largest smaller one that fits in memory.
  for (ArtifactRow& r : profile) r.plan = fit_micro_batch(profile_job, r.allocation, r.plan, config.memory);

  // The forward profile, transferred by FLOPs when it was measured on another model.
  const double profile_params = profile.front().profile_params;
  const bool other_model = std::abs(profile_params - v.model.params) > kOtherModelTolerance * v.model.params;
  double flop_ratio = 1.0;
  if (other_model) {
    ModelSpec measured = v.model;
    measured.params = profile_params;
    flop_ratio = forward_flops_per_sample(v.model, w.seq_len) / forward_flops_per_sample(measured, w.seq_len);
    v.notes.push_back(fmt::format(
        "profile/{} measured a model of {:.3g} parameters, not {} ({:.3g}): forward times scaled by the FLOP "
        "ratio {:.2f}, iteration times not used for fitting",
        w.profile, profile_params, v.model.name, v.model.params, flop_ratio));
  }
  // A profile without forward times (morph-profile job measures whole iterations): a
  // third of each iteration stands for its forward pass (k_bwd = 2, communication hidden).
  const bool forward_measured =
      std::all_of(profile.begin(), profile.end(), [](const ArtifactRow& r) { return r.forward_ms > 0; });
  if (!forward_measured)
    v.notes.push_back("the profile has no forward times: a third of each iteration is taken as its forward pass");
  std::vector<ForwardSample> samples;
  for (const ArtifactRow& r : profile)
    samples.push_back({critical_path_samples(w.profile_global_batch, r.plan),
                       (forward_measured ? r.forward_ms : r.iter_ms / 3) * flop_ratio});
  v.forward = fit_forward_model(samples, reference_speed);
  v.forward.seq_len = w.seq_len;  // what a saved model is scaled from (ForwardModel::at_sequence)

  for (const std::string& file : trace_files) {
    for (ArtifactRow& r : read_trace(file, w, spec, config.cluster)) {
      r.plan = fit_micro_batch(job, r.allocation, r.plan, config.memory);
      ValidatedRow row;
      row.family = plan_family(r.plan);
      row.violation = plan_violation(job, r.allocation, r.plan, config.memory);
      if (w.profile_global_batch == w.global_batch && !other_model)
        for (const ArtifactRow& p : profile) row.profiled = row.profiled || same_configuration(r, p);
      row.in_scope = !options.paper_scope || in_paper_scope(v.model, r.allocation);
      row.row = std::move(r);
      v.rows.push_back(std::move(row));
    }
  }

  std::vector<MeasuredPoint>& points = v.points;
  if (!other_model)
    for (const ArtifactRow& r : profile) points.push_back(measured_point(r, profile_job, v.forward, true));
  std::vector<std::size_t> extra;
  PerfParams profile_fit;  // defaults without a profile
  if (options.in_sample) {
    for (std::size_t i = 0; i < v.rows.size(); ++i)
      if (v.rows[i].row.iter_ms > 0) extra.push_back(i);
  } else if (options.extra_rows > 0) {
    if (!points.empty()) profile_fit = fit_perf_params(points).params;
    if (options.random_rows_seed != 0) {  // each workload draws from its own stream
      extra = random_extra_rows(v.rows, stream_seed(options.random_rows_seed, w.name), options.extra_rows);
    } else {
      // Rows are chosen where the profile's own fit (as `morph fit --profile` fits it) is
      // least sure.
      std::vector<IterationTerms> row_terms(v.rows.size());
      for (std::size_t i = 0; i < v.rows.size(); ++i)
        if (v.rows[i].row.iter_ms > 0)
          row_terms[i] = iteration_terms(job, v.rows[i].row.plan, v.rows[i].row.allocation, v.forward);
      extra = select_extra_rows(v.rows, row_terms, points, profile_fit, options.prior_weight, options.extra_rows);
    }
  }
  for (std::size_t i : extra) {
    v.rows[i].used_for_fit = !options.in_sample;
    points.push_back(measured_point(v.rows[i].row, job, v.forward, false));
  }
  if (points.empty()) {
    v.fit.params = PerfParams{};
    v.notes.push_back("no usable measurements to fit: default parameters");
  } else {
    // A few trace rows inform the parameters the profile cannot (k_mp, k_net) but do not
    // pin them: such fits carry the prior of an online refit around the profile's fit,
    // as morphd refits a profiled model.
    FitOptions fit_options;
    if (!extra.empty() && !options.in_sample) fit_options.prior_weight = options.prior_weight;
    v.fit = fit_perf_params(points, fit_options, profile_fit);
    v.prior = {profile_fit, fit_options.prior_weight};
    v.fitted = true;
  }
  for (ValidatedRow& r : v.rows) {
    if (r.row.iter_ms <= 0) continue;
    r.predicted_ms =
        predict_iteration(iteration_terms(job, r.row.plan, r.row.allocation, v.forward), v.fit.params).iter_ms;
    r.error = std::abs(r.predicted_ms - r.row.iter_ms) / r.row.iter_ms;
  }
  return v;
}

bool in_paper_scope(const ModelSpec& model, const Allocation& allocation) {
  return model.params >= 1e9 || allocation.nodes.size() == 1;
}

PerfModel fitted_perf_model(const WorkloadValidation& v) {
  PerfModel perf{v.forward, v.fit.params};
  if (v.fitted && !v.points.empty()) {
    perf.evidence = std::make_shared<const FitEvidence>(v.points);
    perf.prior = v.prior;
  }
  return perf;
}

ValidationReport validate_artifact(const std::string& artifact_dir, const ArtifactSpec& spec, const Catalog& catalog,
                                   const MorphConfig& config, const ValidationOptions& options) {
  std::error_code ec;  // a path too long or unreadable is "not an artifact" too
  if (!std::filesystem::is_directory(artifact_dir + "/profile", ec) ||
      !std::filesystem::is_directory(artifact_dir + "/traces", ec))
    throw Error(fmt::format("{}: not a Morphling artifact folder (expected profile/ and traces/)", quote(artifact_dir)));
  ValidationReport report;
  report.options = options;
  for (const std::string& t : spec.skipped_traces)
    report.notes.push_back(fmt::format("traces/{}: no profile in the artifact, not validated", t));
  double sum = 0;
  for (const ArtifactWorkload& w : spec.workloads) {
    std::vector<std::string> traces;
    for (const std::string& t : w.traces) traces.push_back(artifact_dir + "/traces/" + t + "/placements.csv");
    WorkloadValidation v =
        fit_workload(artifact_dir + "/profile/" + w.profile, traces, w, spec, catalog, config, options);
    std::vector<std::string> order;
    std::map<std::string, FamilyError> families;
    for (ValidatedRow& r : v.rows) {
      const bool measured = r.row.iter_ms > 0;
      ++report.feasibility_rows;
      if (measured == r.violation.empty()) ++report.feasibility_agree;
      if (!measured || r.used_for_fit || (r.profiled && !options.in_sample) || !r.in_scope) continue;
      r.scored = true;
      FamilyError& f = families[r.family];
      if (f.points == 0) {
        order.push_back(r.family);
        f.workload = w.name;
        f.family = r.family;
      }
      ++f.points;
      f.avg += r.error;
      if (r.error >= f.max) {
        f.max = r.error;
        f.worst = r.row.exec_plan + "," + r.row.placement;
      }
      ++report.points;
      sum += r.error;
      report.max = std::max(report.max, r.error);
    }
    for (const std::string& name : order) {
      FamilyError f = families[name];
      f.avg /= f.points;
      report.families.push_back(f);
    }
    report.workloads.push_back(std::move(v));
  }
  report.avg = report.points > 0 ? sum / report.points : 0;
  return report;
}

}  // namespace morph
