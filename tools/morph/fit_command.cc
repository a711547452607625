// morph fit: fit the iteration-time model to a profile folder (--profile), or refit a
// saved model to observed iteration times (--warm-start, Morphling §4).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libmorph/artifact/validation.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/refit/refit.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"
#include "tools/morph/commands.h"
#include "tools/morph/request_check.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

struct FitArgs {
  std::string profile;
  std::string model;
  std::int64_t batch = 0;
  int micro_batch = 0;
  std::int64_t seq = 0;
  std::string pipeline;
  int extra = 0;
  std::string save;
  // Online refit.
  std::string warm_start;
  std::string points;
  double prior_weight = kDefaultPriorWeight;
};

void save_model(const std::string& path, const std::string& model, const PerfModel& perf) {
  replace_text_file(path, perf_model_to_json(model, perf), "--save");
}

ArtifactWorkload workload_for(Context& context, const FitArgs& args, const ArtifactSpec& spec,
                              const std::string& profile_name) {
  ArtifactWorkload w;
  const ArtifactWorkload* known = spec.find_by_profile(profile_name);
  // --model naming the profile's own model changes nothing.
  if (known != nullptr && !args.model.empty() &&
      context.catalog().resolve(args.model, "--model").name != context.catalog().resolve(known->model, "its model").name)
    known = nullptr;
  if (known != nullptr) {
    w = *known;
  } else {
    if (args.model.empty())
      throw Error(fmt::format("--profile: {} is not described in {}; give --model and --batch", quote(profile_name),
                              context.spec_path));
    if (args.batch == 0) throw Error("--model: a model other than the profile's described one needs --batch");
    w.name = profile_name;
    w.model = args.model;
    w.profile = profile_name;
    w.global_batch = w.profile_global_batch = args.batch;
    w.micro_batch = 1;
    w.seq_len = context.catalog().resolve(args.model, "--model").seq_len;
  }
  if (args.batch > 0) w.global_batch = w.profile_global_batch = args.batch;
  if (args.micro_batch > 0) w.micro_batch = args.micro_batch;
  if (args.seq > 0) w.seq_len = args.seq;
  if (args.pipeline == "1f1b") w.pipeline = PipelineSchedule::one_f_one_b;
  else if (args.pipeline == "accumulate") w.pipeline = PipelineSchedule::accumulate;
  return w;
}

void run_fit(Context& context, const FitArgs& args) {
  context.resolve_paths();
  namespace fs = std::filesystem;
  if (std::error_code ec; !fs::is_directory(args.profile, ec)) throw Error(fmt::format("--profile: {} is not a folder", quote(args.profile)));
  const fs::path dir = option_folder(args.profile);
  const std::string name = dir.filename().string();
  const std::string shown = fs::path(args.profile).lexically_normal().string();  // as given
  const ArtifactSpec spec = load_artifact_spec(context.spec_path);
  const ArtifactWorkload w = workload_for(context, args, spec, name);
  std::vector<std::string> traces;
  if (args.extra > 0) {
    const fs::path root = dir.parent_path().parent_path();
    for (const std::string& t : w.traces) traces.push_back((root / "traces" / t / "placements.csv").string());
    if (traces.empty())
      throw Error(fmt::format("--extra: no traces are known for {}; --extra needs the artifact layout", quote(name)));
  }
  ValidationOptions options;
  options.extra_rows = args.extra;
  const WorkloadValidation v = fit_workload(args.profile, traces, w, spec, context.catalog(), context.config(), options);
  if (!args.save.empty()) save_model(args.save, v.model.name, fitted_perf_model(v));

  const auto k = v.fit.params.to_array();
  const auto& info = perf_param_info();
  if (context.json) {
    nlohmann::json j{{"profile", shown}, {"model", v.model.name}, {"global_batch", w.global_batch},
                     {"fitted", v.fitted}, {"rmsle", v.fit.rmsle}, {"converged", v.fit.converged},
                     {"notes", v.notes}};
    j["forward"] = {{"intercept_ms", v.forward.intercept_ms}, {"per_sample_ms", v.forward.per_sample_ms}};
    for (std::size_t i = 0; i < k.size(); ++i)
      j["params"][info[i].name] = {{"value", k[i]}, {"unit", info[i].unit},
                                   {"fitted", v.fitted && v.fit.fitted[i]}};
    j["points"] = nlohmann::json::array();
    for (std::size_t i = 0; i < v.points.size(); ++i)
      j["points"].push_back({{"label", v.points[i].label}, {"measured_ms", v.points[i].iter_ms},
                             {"predicted_ms", v.points[i].iter_ms * (1 + v.fit.rel_errors[i])},
                             {"error", v.fit.rel_errors[i]}});
    std::cout << j.dump(2) << '\n';
    return;
  }
  // The trace rows the fit took: --extra at most, as many as the traces hold.
  const auto extra = std::count_if(v.rows.begin(), v.rows.end(), [](const ValidatedRow& r) { return r.used_for_fit; });
  std::cout << fmt::format("{}: {} with global batch {}, {} measured points{}\n", shown, v.model.name,
                           w.global_batch, v.points.size(),
                           extra > 0 ? fmt::format(" (including {} trace rows)", extra) : "");
  for (const std::string& note : v.notes) std::cout << "note: " << note << '\n';
  std::cout << fmt::format("forward: {:.2f} ms + {:.3f} ms per sample\n\n", v.forward.intercept_ms,
                           v.forward.per_sample_ms);
  // Without a prior, fewer residuals than fitted parameters leave some of them free: the
  // fit reproduces its points whatever they are, and such a parameter often ends on a bound.
  const auto free_params = static_cast<std::size_t>(std::count(v.fit.fitted.begin(), v.fit.fitted.end(), true));
  if (v.fitted && v.fit.residuals < free_params)
    std::cout << fmt::format("note: {} residuals for {} fitted parameters: the points do not determine them\n",
                             v.fit.residuals, free_params);
  Table params({"parameter", "value", "unit", "status"});
  for (std::size_t i = 0; i < k.size(); ++i) {
    const bool fitted = v.fitted && v.fit.fitted[i];
    const bool bound = k[i] <= info[i].lower || k[i] >= info[i].upper;
    params.add({info[i].name, fmt::format("{:.5g}", k[i]), info[i].unit,
                !fitted ? "held (no data informs it)" : bound ? "fitted, on its bound" : "fitted"});
  }
  params.print(std::cout);
  if (v.points.empty()) return;
  std::cout << fmt::format("\nRMSLE {:.4f}{}\n\n", v.fit.rmsle, v.fit.converged ? "" : " (solver stopped before convergence)");
  Table points({"point", "measured", "predicted", "error%"});
  for (std::size_t i = 0; i < v.points.size(); ++i)
    points.add({v.points[i].label, millis(v.points[i].iter_ms), millis(v.points[i].iter_ms * (1 + v.fit.rel_errors[i])),
                fmt::format("{:+.2f}", 100 * v.fit.rel_errors[i])});
  points.print(std::cout);
}

// Morphling §4: the saved model refitted to the iteration times its jobs reported.
void run_refit(Context& context, const FitArgs& args) {
  context.resolve_paths();
  if (args.points.empty()) throw Error("--warm-start: --points FILE is required (the observed iteration times)");
  if (args.batch == 0) throw Error("--warm-start: --batch is required (the global batch of the observed runs)");
  std::string model_name;
  PerfModel start = perf_model_from_json(read_text_file(args.warm_start, "--warm-start"),
                                         "--warm-start: " + args.warm_start, &model_name);
  Workload w;
  // A model given inline (morph(1), MODELS) is in no catalog: --model gives it again.
  if (args.model.empty()) {
    w.model = context.catalog().resolve(model_name, fmt::format("--warm-start: {}: model", args.warm_start));
  } else {
    w.model = context.catalog().resolve(args.model, "--model");
    if (w.model.name != model_name)
      throw Error(fmt::format("--model: {} is not the model {} was fitted for ({})", quote(w.model.name),
                              args.warm_start, quote(model_name)));
  }
  w.global_batch = args.batch;
  // The length the model was fitted at unless --seq says otherwise (then scaled by FLOPs).
  w.seq_len = args.seq > 0 ? args.seq : start.forward.seq_len > 0 ? start.forward.seq_len : w.model.seq_len;
  start.forward = start.forward.at_sequence(w.model, w.seq_len);
  const std::vector<ObservedIteration> observed =
      read_observed_iterations(args.points, "--points", context.config().cluster, w.global_batch);
  FitOptions options;
  options.prior_weight = args.prior_weight;
  const Refit r = refit_perf_model(start, w, observed, options);
  if (!args.save.empty()) save_model(args.save, w.model.name, r.after);

  const auto before = r.before.params.to_array();
  const auto after = r.after.params.to_array();
  const auto& info = perf_param_info();
  auto error = [&](std::size_t i) { return (r.predicted_after_ms[i] - r.points[i].iter_ms) / r.points[i].iter_ms; };
  const std::size_t evidence = start.evidence ? start.evidence->size() : 0;
  // The prior the refit used, which it keeps (refit.h).
  const double prior_weight = r.after.prior.weight;
  const bool own_prior = start.prior.weight > 0;
  if (context.json) {
    nlohmann::json j{{"warm_start", args.warm_start}, {"points_file", args.points}, {"model", w.model.name},
                     {"global_batch", w.global_batch}, {"seq", w.seq_len}, {"prior_weight", prior_weight},
                     {"prior", own_prior ? "its fit's" : "around its parameters"}, {"evidence_points", evidence},
                     {"rmsle", r.fit.rmsle}, {"converged", r.fit.converged}};
    j["forward"] = {{"intercept_ms", r.after.forward.intercept_ms}, {"per_sample_ms", r.after.forward.per_sample_ms}};
    for (std::size_t i = 0; i < after.size(); ++i)
      j["params"][info[i].name] = {{"before", before[i]}, {"after", after[i]}, {"unit", info[i].unit}};
    j["points"] = nlohmann::json::array();
    for (std::size_t i = 0; i < r.points.size(); ++i)
      j["points"].push_back({{"label", r.points[i].label}, {"plan", to_string(observed[i].plan)},
                             {"gpus", observed[i].allocation.to_string()}, {"measured_ms", r.points[i].iter_ms},
                             {"predicted_before_ms", r.predicted_before_ms[i]},
                             {"predicted_after_ms", r.predicted_after_ms[i]}, {"error", error(i)}});
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("{}: {} with global batch {}, seq {}, refitted to {} observed iterations of {} "
                           "and the {} points it was fitted on (prior weight {:g} {})\n\n",
                           args.warm_start, w.model.name, w.global_batch, w.seq_len, observed.size(), args.points,
                           evidence, prior_weight, own_prior ? "of its fit" : "around its parameters");
  Table params({"parameter", "before", "after", "unit"});
  for (std::size_t i = 0; i < after.size(); ++i)
    params.add({info[i].name, fmt::format("{:.5g}", before[i]), fmt::format("{:.5g}", after[i]), info[i].unit});
  params.print(std::cout);
  std::cout << fmt::format("\nRMSLE {:.4f}{}\n\n", r.fit.rmsle,
                           r.fit.converged ? "" : " (solver stopped before convergence)");
  Table points({"point", "gpus", "measured", "before", "after", "error%"});
  for (std::size_t i = 0; i < r.points.size(); ++i)
    points.add({r.points[i].label, observed[i].allocation.to_string(), millis(r.points[i].iter_ms),
                millis(r.predicted_before_ms[i]), millis(r.predicted_after_ms[i]),
                fmt::format("{:+.2f}", 100 * error(i))});
  points.print(std::cout);
}

void run(Context& context, const FitArgs& args) {
  if (!args.warm_start.empty()) return run_refit(context, args);
  if (args.profile.empty())
    throw Error(
        "fit: give --profile DIR to fit a profile, or --warm-start PARAMS --points FILE to refit a saved model");
  run_fit(context, args);
}

}  // namespace

void add_fit_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<FitArgs>();
  command_line::Command cmd =
      app.subcommand("fit",
                     "fit the iteration-time model to a profile folder (config.csv + data.csv), or refit a saved model "
                     "to observed iteration times");
  command_line::Option profile =
      cmd.option("--profile", args->profile, "profile folder, e.g. morphling-artifact/profile/bert");
  command_line::Option warm = cmd.option("--warm-start", args->warm_start,
                                         "refit this saved model (morph fit --save) to --points instead of a profile");
  profile.excludes(warm);
  cmd.option("--points", args->points, "observed iterations, CSV plan,gpus,iter_ms[,cpus_per_gpu]").needs(warm);
  cmd.option("--prior-weight", args->prior_weight,
             "weight of the prior around the --warm-start parameters, where the model's fit had none")
      .show_default()
      .range(0.0, 1e6)
      .needs(warm);
  cmd.option("--model", args->model,
             "catalog model or inline specification (default: from the artifact description; with --warm-start, "
             "the saved model's, which an inline model must give again)");
  cmd.option("--batch", args->batch, "global batch of the profiled (or observed) runs").check(request_check("batch"));
  cmd.option("--micro-batch", args->micro_batch, "micro-batch size of the profiled runs")
      .range(1, 1 << 20)
      .excludes(warm);
  cmd.option("--seq", args->seq, "sequence length").check(request_check("seq"));
  cmd.option("--pipeline", args->pipeline, "pipeline schedule of PP runs")
      .one_of({"1f1b", "accumulate"})
      .excludes(warm);
  cmd.option("--extra", args->extra, "add K trace rows to the fitting set (docs/validation.md)")
      .range(0, 1000)
      .excludes(warm);
  cmd.option("--save", args->save, "write the fitted model as JSON (for morph plan --perf)");
  cmd.on_run([&context, args] { run(context, *args); });
}

}  // namespace morph::cli
