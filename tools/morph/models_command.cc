// morph models: the iteration-time model morphd predicts each catalog model with (its
// parameters from the latest online refit, PerfModelDir, or the FLOP estimate's
// defaults) and what that model's jobs measured against it, as the online refit
// remembers it (refit_points; docs/state.md). The database is morphd's (mode 0600): run
// as root or SlurmUser.
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "daemon/online_params.h"
#include "daemon/store/state_store.h"
#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/util/median.h"
#include "tools/morph/commands.h"
#include "tools/morph/state_file.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

struct ModelsArgs {
  std::string state;  // --state: the database ("": morph.conf StateDatabase)
  std::string model;  // only this catalog model
};

// One configuration the model's jobs ran: the median of their latest times, as the refit
// takes it, against what the parameters in use predict.
struct MeasuredConfiguration {
  std::string configuration;
  int jobs = 0;
  double measured_s = 0;
  double predicted_s = 0;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

std::vector<MeasuredConfiguration> measured(const std::vector<policy::RefitPoint>& points, const PerfParams& params) {
  std::map<std::string, std::vector<const policy::RefitPoint*>> by_key;
  for (const policy::RefitPoint& p : points) by_key[policy::configuration_key(p)].push_back(&p);
  std::vector<MeasuredConfiguration> out;
  for (const auto& [key, jobs] : by_key) {
    std::vector<double> times;
    for (const policy::RefitPoint* p : jobs) times.push_back(p->iteration_s);
    const policy::RefitPoint& p = *jobs.back();
    const IterationTerms terms = iteration_terms(p.workload, p.plan, p.allocation, p.forward);
    out.push_back({key, static_cast<int>(jobs.size()), median(times), predict_iteration(terms, params).iter_ms / 1e3});
  }
  return out;
}

void run_models(Context& context, const ModelsArgs& args) {
  const MorphConfig& config = context.config();
  const Catalog& catalog = context.catalog();
  const std::string only = args.model.empty() ? "" : catalog.named(args.model, "--model").name;
  const store::StateStore state = open_morphd_state(context, args.state);
  const PerfStore perf = PerfStore::load_dir(config.perf_model_dir);
  const std::map<std::string, PerfModel> refitted = daemon::load_online_refits(state, catalog);
  const daemon::ViewContext view{config, catalog, perf, &refitted};
  std::vector<std::string> skipped;
  std::map<std::string, std::vector<policy::RefitPoint>> points;  // by model
  for (policy::RefitPoint& p : daemon::load_refit_points(state, view, &skipped, only)) points[p.model].push_back(std::move(p));

  nlohmann::json out = nlohmann::json::array();
  Table models({"model", "parameters", "fitted", "rmsle", "configurations", "jobs", "mean error"});
  std::vector<std::pair<std::string, std::vector<MeasuredConfiguration>>> details;
  for (const ModelSpec& model : catalog.models()) {
    if (!only.empty() && model.name != only) continue;
    const std::optional<store::FittedParams> latest = state.latest_params(model.name);
    const auto mine = points.find(model.name);
    if (!latest && mine == points.end() && only.empty()) continue;  // nothing morphd learned of it
    const bool online = refitted.count(model.name) > 0;
    const std::string source = online ? "online refit" : perf.has(model.name) ? "PerfModelDir" : "FLOP estimate";
    const PerfModel in_use = daemon::model_in_use(model, model.seq_len, view);
    const std::vector<MeasuredConfiguration> configurations =
        mine == points.end() ? std::vector<MeasuredConfiguration>{} : measured(mine->second, in_use.params);
    std::set<std::string> jobs;
    if (mine != points.end())
      for (const policy::RefitPoint& p : mine->second) jobs.insert(p.job);
    double error = 0;
    nlohmann::json rows = nlohmann::json::array();
    for (const MeasuredConfiguration& c : configurations) {
      error += std::abs(c.error()) / static_cast<double>(configurations.size());
      rows.push_back({{"configuration", c.configuration}, {"jobs", c.jobs}, {"measured_s", c.measured_s},
                      {"predicted_s", c.predicted_s}, {"error", c.error()}});
    }
    const bool fitted_online = online && latest;
    out.push_back({{"model", model.name},
                   {"parameters", source},
                   {"fitted_at", fitted_online ? nlohmann::json(latest->fitted_at) : nlohmann::json(nullptr)},
                   {"rmsle", fitted_online ? nlohmann::json(latest->rmsle) : nlohmann::json(nullptr)},
                   {"params", nlohmann::json::parse(perf_model_to_json(model.name, in_use))["params"]},
                   {"jobs", jobs.size()},
                   {"mean_error", configurations.empty() ? nlohmann::json(nullptr) : nlohmann::json(error)},
                   {"configurations", rows}});
    models.add({model.name, source, fitted_online ? local_time(latest->fitted_at) : "-",
                fitted_online ? fmt::format("{:.4f}", latest->rmsle) : "-", std::to_string(configurations.size()),
                std::to_string(jobs.size()), configurations.empty() ? "-" : fmt::format("{:.1f}%", 100 * error)});
    if (!configurations.empty()) details.emplace_back(model.name, configurations);
  }
  if (context.json) {
    std::cout << nlohmann::json{{"models", out}, {"left_out", skipped}}.dump(2) << '\n';
    return;
  }
  for (const std::string& s : skipped) std::cerr << "morph models: " << s << '\n';
  if (models.empty()) {
    std::cout << "morphd has refitted no model and measured no configuration in " << state.path() << '\n';
    return;
  }
  models.print(std::cout);
  for (const auto& [model, configurations] : details) {
    std::cout << '\n' << model << ": what its jobs measured, against the parameters in use\n";
    Table table({"configuration", "jobs", "measured s", "predicted s", "error"});
    for (const MeasuredConfiguration& c : configurations)
      table.add({c.configuration, std::to_string(c.jobs), fmt::format("{:.3f}", c.measured_s),
                 fmt::format("{:.3f}", c.predicted_s), fmt::format("{:+.1f}%", 100 * c.error())});
    table.print(std::cout);
  }
}

}  // namespace

void add_models_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<ModelsArgs>();
  command_line::Command cmd = app.subcommand(
      "models", "the parameters morphd predicts each model with, and what its jobs measured against them");
  cmd.option("--state", args->state, "morphd's state database (default: morph.conf StateDatabase)");
  cmd.option("--model", args->model, "only this catalog model (name or alias)");
  cmd.on_run([&context, args] { run_models(context, *args); });
}

}  // namespace morph::cli
