// morph fit: fit the iteration-time model to a profile folder.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libmorph/artifact/validation.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
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
};

ArtifactWorkload workload_for(Context& context, const FitArgs& args, const ArtifactSpec& spec,
                              const std::string& profile_name) {
  ArtifactWorkload w;
  const ArtifactWorkload* known = spec.find_by_profile(profile_name);
  if (known != nullptr && args.model.empty()) {
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
  if (!fs::is_directory(args.profile)) throw Error(fmt::format("--profile: {} is not a folder", quote(args.profile)));
  const fs::path dir = fs::path(args.profile).lexically_normal();
  const std::string name = (dir.filename().empty() ? dir.parent_path() : dir).filename().string();
  const ArtifactSpec spec = load_artifact_spec(context.spec_path);
  const ArtifactWorkload w = workload_for(context, args, spec, name);
  std::vector<std::string> traces;
  if (args.extra > 0) {
    const fs::path root = fs::absolute(dir).parent_path().parent_path();
    for (const std::string& t : w.traces) traces.push_back((root / "traces" / t / "placements.csv").string());
    if (traces.empty())
      throw Error(fmt::format("--extra: no traces are known for {}; --extra needs the artifact layout", quote(name)));
  }
  ValidationOptions options;
  options.extra_rows = args.extra;
  const WorkloadValidation v = fit_workload(dir.string(), traces, w, spec, context.catalog(), context.config(), options);
  const PerfModel perf{v.forward, v.fit.params};
  if (!args.save.empty()) {
    std::ofstream out(args.save);
    out << perf_model_to_json(v.model.name, perf);
    if (!out) throw Error(fmt::format("--save: {}: cannot write", args.save));
  }

  const auto k = v.fit.params.to_array();
  const auto& info = perf_param_info();
  if (context.json) {
    nlohmann::json j{{"profile", dir.string()}, {"model", v.model.name}, {"global_batch", w.global_batch},
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
  std::cout << fmt::format("{}: {} with global batch {}, {} measured points{}\n", dir.string(), v.model.name,
                           w.global_batch, v.points.size(),
                           args.extra > 0 ? fmt::format(" (including {} trace rows)", args.extra) : "");
  for (const std::string& note : v.notes) std::cout << "note: " << note << '\n';
  std::cout << fmt::format("forward: {:.2f} ms + {:.3f} ms per sample\n\n", v.forward.intercept_ms,
                           v.forward.per_sample_ms);
  Table params({"parameter", "value", "unit", "status"});
  for (std::size_t i = 0; i < k.size(); ++i)
    params.add({info[i].name, fmt::format("{:.5g}", k[i]), info[i].unit,
                v.fitted && v.fit.fitted[i] ? "fitted" : "held (no data informs it)"});
  params.print(std::cout);
  if (v.points.empty()) return;
  std::cout << fmt::format("\nRMSLE {:.4f}{}\n\n", v.fit.rmsle, v.fit.converged ? "" : " (solver stopped before convergence)");
  Table points({"point", "measured", "predicted", "error%"});
  for (std::size_t i = 0; i < v.points.size(); ++i)
    points.add({v.points[i].label, millis(v.points[i].iter_ms), millis(v.points[i].iter_ms * (1 + v.fit.rel_errors[i])),
                fmt::format("{:+.2f}", 100 * v.fit.rel_errors[i])});
  points.print(std::cout);
}

}  // namespace

void add_fit_command(CLI::App& app, Context& context) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand("fit", "fit the iteration-time model to a profile folder (config.csv + data.csv)");
  cmd->add_option("--profile", args->profile, "profile folder, e.g. morphling-artifact/profile/bert")->required();
  cmd->add_option("--model", args->model, "catalog model (default: from the artifact description)");
  cmd->add_option("--batch", args->batch, "global batch of the profiled runs")->check(request_check("batch"));
  cmd->add_option("--micro-batch", args->micro_batch, "micro-batch size of the profiled runs")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--seq", args->seq, "sequence length")->check(request_check("seq"));
  cmd->add_option("--pipeline", args->pipeline, "pipeline schedule of PP runs")->check(CLI::IsMember({"1f1b", "accumulate"}));
  cmd->add_option("--extra", args->extra, "add K trace rows to the fitting set (docs/validation.md)")->check(CLI::Range(0, 1000));
  cmd->add_option("--save", args->save, "write the fitted model as JSON (for morph plan --perf)");
  cmd->callback([&context, args] { run_fit(context, *args); });
}

}  // namespace morph::cli
