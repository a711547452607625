// morph validate: Table 2 of the Morphling paper on the artifact's measurements.
#include <iostream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libmorph/artifact/validation.h"
#include "tools/morph/commands.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

// The smallest number of extra trace rows per workload this project recommends; see
// docs/validation.md for how it was chosen.
constexpr int kRecommendedExtraRows = 3;

struct ValidateArgs {
  std::string artifact;
  int extra = kRecommendedExtraRows;
  bool in_sample = false;
  bool rows = false;
};

std::string overall_line(const ValidationReport& r) {
  const std::string how = r.options.in_sample
      ? "in-sample: fitted on every trace row"
      : fmt::format("K={} extra rows per workload{}", r.options.extra_rows,
                    r.options.extra_rows == kRecommendedExtraRows ? ", the recommended K" : "");
  return fmt::format("overall: avg {:.2f}% max {:.2f}% over {} points ({})", 100 * r.avg, 100 * r.max, r.points, how);
}

void run_validate(Context& context, const ValidateArgs& args) {
  context.resolve_paths();
  ValidationOptions options;
  options.extra_rows = args.extra;
  options.in_sample = args.in_sample;
  const ArtifactSpec spec = load_artifact_spec(context.spec_path);
  const ValidationReport report = validate_artifact(args.artifact, spec, context.catalog(), context.config(), options);

  if (context.json) {
    nlohmann::json j{{"extra_rows", args.extra}, {"in_sample", args.in_sample}, {"points", report.points},
                     {"avg_error", report.avg}, {"max_error", report.max}, {"notes", report.notes},
                     {"feasibility_rows", report.feasibility_rows}, {"feasibility_agree", report.feasibility_agree},
                     {"overall", overall_line(report)}};
    for (const FamilyError& f : report.families)
      j["families"].push_back({{"workload", f.workload}, {"family", f.family}, {"points", f.points},
                               {"avg_error", f.avg}, {"max_error", f.max}, {"worst", f.worst}});
    for (const WorkloadValidation& v : report.workloads) {
      nlohmann::json wj{{"name", v.workload.name}, {"model", v.model.name}, {"fitted", v.fitted}, {"notes", v.notes}};
      const auto k = v.fit.params.to_array();
      for (std::size_t i = 0; i < k.size(); ++i) wj["params"][perf_param_info()[i].name] = k[i];
      for (const ValidatedRow& r : v.rows)
        wj["rows"].push_back({{"source", r.row.source}, {"exec_plan", r.row.exec_plan}, {"placement", r.row.placement},
                              {"family", r.family}, {"measured_ms", r.row.iter_ms}, {"predicted_ms", r.predicted_ms},
                              {"error", r.error}, {"used_for_fit", r.used_for_fit}, {"profiled", r.profiled},
                              {"violation", r.violation}});
      j["workloads"].push_back(wj);
    }
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("Morphling artifact {}: each workload fitted on its profile{}; errors on the other trace rows\n\n",
                           args.artifact,
                           args.in_sample ? " and every trace row (in-sample)"
                                          : fmt::format(" + {} trace rows", args.extra));
  Table table({"workload", "family", "n", "avg%", "max%", "worst"});
  for (const FamilyError& f : report.families)
    table.add({f.workload, f.family, std::to_string(f.points), percent(f.avg), percent(f.max), f.worst});
  table.print(std::cout);
  if (args.rows) {
    std::cout << '\n';
    Table rows({"workload", "row", "family", "measured", "predicted", "error%", "status"});
    for (const WorkloadValidation& v : report.workloads)
      for (const ValidatedRow& r : v.rows) {
        std::string status = r.used_for_fit ? "fitted" : r.profiled ? "profiled" : r.row.iter_ms <= 0 ? "did not run" : "";
        if (!r.violation.empty()) status += (status.empty() ? "" : "; ") + ("morph: " + r.violation);
        rows.add({v.workload.name, r.row.exec_plan + "," + r.row.placement, r.family, millis(r.row.iter_ms),
                  r.row.iter_ms > 0 ? millis(r.predicted_ms) : "-",
                  r.row.iter_ms > 0 ? fmt::format("{:+.2f}", 100 * (r.predicted_ms - r.row.iter_ms) / r.row.iter_ms) : "-",
                  status});
      }
    rows.print(std::cout);
  }
  std::cout << '\n';
  for (const WorkloadValidation& v : report.workloads)
    for (const std::string& note : v.notes) std::cout << "note: " << v.workload.name << ": " << note << '\n';
  for (const std::string& note : report.notes) std::cout << "note: " << note << '\n';
  std::cout << fmt::format("feasibility: Morph's verdict (runs / cannot run) agrees with {} of {} trace rows\n",
                           report.feasibility_agree, report.feasibility_rows)
            << overall_line(report) << '\n';
}

}  // namespace

void add_validate_command(CLI::App& app, Context& context) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand("validate", "fit and predict the Morphling artifact's measurements (paper Table 2)");
  cmd->add_option("--artifact", args->artifact, "the artifact folder (profile/, traces/)")->required();
  cmd->add_option("--extra", args->extra, "trace rows per workload added to the fitting set")
      ->capture_default_str()->check(CLI::Range(0, 1000));
  cmd->add_flag("--in-sample", args->in_sample, "fit on every trace row as well: the model's floor, not a prediction");
  cmd->add_flag("--rows", args->rows, "list every trace row with its prediction");
  cmd->callback([&context, args] { run_validate(context, *args); });
}

}  // namespace morph::cli
