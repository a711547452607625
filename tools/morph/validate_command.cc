// morph validate: Table 2 of the Morphling paper on the artifact's measurements.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libmorph/artifact/online_refit.h"
#include "libmorph/artifact/validation.h"
#include "libmorph/util/error.h"
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
  bool online = false;
  bool paper_scope = false;
  double prior_weight = kDefaultPriorWeight;
  double refit_threshold = 0;
  int random_draws = 0;
  int orders = 0;
};

// Average error over the scored rows of each workload, then over all of them.
std::vector<double> workload_averages(const ValidationReport& r) {
  std::vector<double> out;
  for (const WorkloadValidation& v : r.workloads) {
    double sum = 0;
    int n = 0;
    for (const ValidatedRow& row : v.rows)
      if (row.scored) {
        sum += row.error;
        ++n;
      }
    out.push_back(n > 0 ? sum / n : 0);
  }
  out.push_back(r.avg);
  return out;
}

// The value below which a share q of the sorted `values` lie (nearest rank).
double quantile(const std::vector<double>& sorted, double q) {
  return sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5)];
}

// How much the figures owe to which K rows were fitted: the rule's choice against draws
// of K rows at random among the same candidates (docs/validation.md, "The rule against chance").
void print_random_spread(Context& context, const ValidateArgs& args, const ValidationOptions& options,
                         const ArtifactSpec& spec, const ValidationReport& rule) {
  const std::vector<double> ruled = workload_averages(rule);
  std::vector<std::vector<double>> draws(ruled.size());
  for (int d = 1; d <= args.random_draws; ++d) {
    ValidationOptions o = options;
    o.random_rows_seed = static_cast<std::uint64_t>(d);
    const std::vector<double> a =
        workload_averages(validate_artifact(args.artifact, spec, context.catalog(), context.config(), o));
    for (std::size_t i = 0; i < a.size(); ++i) draws[i].push_back(a[i]);
  }
  for (std::vector<double>& d : draws) std::sort(d.begin(), d.end());
  const auto worse = [](const std::vector<double>& sorted, double value) {  // share of draws above it
    return static_cast<double>(sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), value)) /
           static_cast<double>(sorted.size());
  };
  const std::vector<double>& all = draws.back();
  const std::string summary = fmt::format(
      "random rows: draws={} K={} median={:.2f}% p10={:.2f}% p90={:.2f}% rule={:.2f}% rule_better_than={:.0f}%",
      args.random_draws, options.extra_rows, 100 * quantile(all, 0.5), 100 * quantile(all, 0.1),
      100 * quantile(all, 0.9), 100 * ruled.back(), 100 * worse(all, ruled.back()));
  if (context.json) {
    nlohmann::json j{{"draws", args.random_draws}, {"extra_rows", options.extra_rows}, {"summary", summary}};
    for (std::size_t i = 0; i < draws.size(); ++i)
      j["workloads"].push_back({{"name", i + 1 < draws.size() ? rule.workloads[i].workload.name : "overall"},
                                {"rule_avg_error", ruled[i]}, {"random_avg_errors", draws[i]}});
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("Row choice on the Morphling artifact {}: the rule's {} rows per workload against {} draws "
                           "of {} at random among the same candidates; average error over each fit's other rows\n\n",
                           args.artifact, options.extra_rows, args.random_draws, options.extra_rows);
  Table table({"workload", "rule%", "median%", "p10%", "p90%", "rule better than"});
  for (std::size_t i = 0; i < draws.size(); ++i)
    table.add({i + 1 < draws.size() ? rule.workloads[i].workload.name : "overall", percent(ruled[i]),
               percent(quantile(draws[i], 0.5)), percent(quantile(draws[i], 0.1)), percent(quantile(draws[i], 0.9)),
               fmt::format("{:.0f}% of draws", 100 * worse(draws[i], ruled[i]))});
  table.print(std::cout);
  std::cout << '\n' << summary << '\n';
}

// Morphling §4: the online-refit curve of every workload and family (online_refit.h).
void print_online(Context& context, const ValidateArgs& args, const ValidationReport& validation) {
  OnlineRefitOptions options;
  options.prior_weight = args.prior_weight;
  options.refit_threshold = args.refit_threshold;
  const OnlineRefitReport report = online_refit(validation.workloads, options);
  const std::vector<OnlineRefitModel> models = online_refit_by_model(report.curves);
  const int last = options.observed_rows;
  const std::string gate =
      options.refit_threshold > 0 ? fmt::format("refit_threshold={:g} ", options.refit_threshold) : "";
  const std::string summary =
      fmt::format("online: {}families={} halved_after_{}={} halvable_by_level={} halvable_by_fit={}", gate,
                  report.curves.size(), last, report.halved, report.halvable, report.halvable_by_fit);
  if (context.json) {
    nlohmann::json j{{"extra_rows", args.extra}, {"prior_weight", options.prior_weight},
                     {"refit_threshold", options.refit_threshold}, {"observed_rows", options.observed_rows},
                     {"min_rows", options.min_rows},
                     {"families", report.curves.size()}, {"halved", report.halved},
                     {"halvable_by_level", report.halvable}, {"halvable_by_fit", report.halvable_by_fit},
                     {"summary", summary}};
    j["curves"] = nlohmann::json::array();
    for (const OnlineRefitCurve& c : report.curves)
      j["curves"].push_back({{"workload", c.workload}, {"family", c.family}, {"observed", c.observed},
                             {"held_out", c.held_out}, {"avg_error", c.avg_error}, {"max_error", c.max_error},
                             {"level_floor", c.level_floor}, {"fit_floor", c.fit_floor}});
    j["models"] = nlohmann::json::array();
    for (const OnlineRefitModel& m : models)
      j["models"].push_back({{"workload", m.workload}, {"families", m.families}, {"halved", m.halved},
                             {"held_out", m.held_out}, {"avg_error_before", m.avg_error_before},
                             {"avg_error_after", m.avg_error_after}});
    std::cout << j.dump(2) << '\n';
    return;
  }
  const std::string when = options.refit_threshold > 0
      ? fmt::format(" where the model in use mispredicts those rows by more than {:g}% (kept where it predicts them "
                    "better, as morphd does)", 100 * options.refit_threshold)
      : " (kept where it predicts them better, as morphd does)";
  std::cout << fmt::format("Online refit on the Morphling artifact {}: each workload fitted on its profile + {} trace "
                           "rows (prior weight {:g}), then refitted to those points and the first n of a family's "
                           "unseen rows{}; "
                           "errors on the family's other rows; level%: the least error of one factor on the "
                           "fitted model's predictions, chosen knowing those rows; fit%: the same after "
                           "refitting the model to those rows themselves (no prior)\n\n",
                           args.artifact, args.extra, options.prior_weight, when);
  std::vector<std::string> header{"workload", "family", "held_out"};
  for (int n = 0; n <= last; ++n) header.push_back(fmt::format("err{}%", n));
  header.push_back(fmt::format("ratio{}", last));
  header.push_back("level%");
  header.push_back("fit%");
  Table table(header);
  for (const OnlineRefitCurve& c : report.curves) {
    std::vector<std::string> row{c.workload, c.family, std::to_string(c.held_out)};
    for (double e : c.avg_error) row.push_back(percent(e));
    row.push_back(c.avg_error.front() > 0 ? fmt::format("{:.2f}", c.avg_error.back() / c.avg_error.front()) : "-");
    row.push_back(percent(c.level_floor));
    row.push_back(percent(c.fit_floor));
    table.add(row);
  }
  table.print(std::cout);
  std::cout << fmt::format("\nPer model: its families together, each weighed by its held-out rows\n\n");
  Table per_model({"workload", "families", fmt::format("halved_after_{}", last), "held_out", "err0%",
                   fmt::format("err{}%", last), fmt::format("ratio{}", last)});
  for (const OnlineRefitModel& m : models)
    per_model.add({m.workload, std::to_string(m.families), std::to_string(m.halved), std::to_string(m.held_out),
                   percent(m.avg_error_before), percent(m.avg_error_after),
                   m.avg_error_before > 0 ? fmt::format("{:.2f}", m.avg_error_after / m.avg_error_before) : "-"});
  per_model.print(std::cout);
  std::cout << '\n' << summary << '\n';
}

// How much the online curve owes to the order of the rows: each family's rows observed in
// `args.orders` random orders besides the trace's (OnlineRefitOptions::order_seed).
void print_online_orders(Context& context, const ValidateArgs& args, const ValidationReport& validation) {
  OnlineRefitOptions options;
  options.prior_weight = args.prior_weight;
  options.refit_threshold = args.refit_threshold;
  struct Family {
    std::string workload, family;
    bool trace_halved = false;
    int halved = 0;
    double err_before = 0, err_after = 0;  // summed over the random orders
  };
  const OnlineRefitReport trace = online_refit(validation.workloads, options);
  std::vector<Family> families;
  for (const OnlineRefitCurve& c : trace.curves) families.push_back({c.workload, c.family, halved(c)});
  std::vector<int> per_order;
  for (int seed = 1; seed <= args.orders; ++seed) {
    options.order_seed = static_cast<std::uint64_t>(seed);
    const OnlineRefitReport r = online_refit(validation.workloads, options);
    if (r.curves.size() != families.size()) throw Error("internal: the random orders found other families");
    for (std::size_t i = 0; i < r.curves.size(); ++i) {
      families[i].halved += halved(r.curves[i]);
      families[i].err_before += r.curves[i].avg_error.front();
      families[i].err_after += r.curves[i].avg_error.back();
    }
    per_order.push_back(r.halved);
  }
  double mean = 0;
  for (int h : per_order) mean += h;
  mean /= std::max(args.orders, 1);
  const auto [low, high] = std::minmax_element(per_order.begin(), per_order.end());
  const std::string summary =
      fmt::format("online orders: orders={} families={} halved_after_{}: trace_order={} random_mean={:.1f} "
                  "random_min={} random_max={}", args.orders, families.size(), options.observed_rows, trace.halved, mean, *low,
                  *high);
  if (context.json) {
    nlohmann::json j{{"extra_rows", args.extra}, {"orders", args.orders}, {"halved_trace_order", trace.halved},
                     {"halved_per_order", per_order}, {"summary", summary}};
    j["families"] = nlohmann::json::array();
    for (const Family& f : families)
      j["families"].push_back({{"workload", f.workload}, {"family", f.family}, {"trace_order_halved", f.trace_halved},
                               {"orders_halved", f.halved}, {"mean_avg_error_before", f.err_before / args.orders},
                               {"mean_avg_error_after", f.err_after / args.orders}});
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("Online refit on the Morphling artifact {} (profile + {} trace rows) with each family's rows "
                           "observed in {} random orders besides the trace's; errors on the family's other rows, "
                           "averaged over the orders\n\n", args.artifact, args.extra, args.orders);
  Table table({"workload", "family", "trace order", "orders halved", "err0%", fmt::format("err{}%", options.observed_rows)});
  for (const Family& f : families)
    table.add({f.workload, f.family, f.trace_halved ? "halved" : "-", fmt::format("{} of {}", f.halved, args.orders),
               percent(f.err_before / args.orders), percent(f.err_after / args.orders)});
  table.print(std::cout);
  std::cout << '\n' << summary << '\n';
}

std::string overall_line(const ValidationReport& r) {
  const std::string how = r.options.in_sample
      ? "in-sample: fitted on every trace row"
      : fmt::format("K={} extra rows per workload{}", r.options.extra_rows,
                    r.options.extra_rows == kRecommendedExtraRows ? ", the recommended K" : "");
  const std::string scope = r.options.paper_scope ? "; the paper's scope: one node for models under 1B parameters" : "";
  return fmt::format("overall: avg {:.2f}% max {:.2f}% over {} points ({}{})", 100 * r.avg, 100 * r.max, r.points, how,
                     scope);
}

void run_validate(Context& context, const ValidateArgs& args) {
  if (args.random_draws > 0 && args.extra == 0)
    throw Error("validate: --random-rows draws the --extra rows, and --extra is 0");
  context.resolve_paths();
  ValidationOptions options;
  options.extra_rows = args.extra;
  options.in_sample = args.in_sample;
  options.paper_scope = args.paper_scope;
  options.prior_weight = args.prior_weight;
  const ArtifactSpec spec = load_artifact_spec(context.spec_path);
  const ValidationReport report = validate_artifact(args.artifact, spec, context.catalog(), context.config(), options);
  if (args.online && args.orders > 0) return print_online_orders(context, args, report);
  if (args.online) return print_online(context, args, report);
  if (args.random_draws > 0) return print_random_spread(context, args, options, spec, report);

  if (context.json) {
    nlohmann::json j{{"extra_rows", args.extra}, {"in_sample", args.in_sample}, {"paper_scope", args.paper_scope},
                     {"points", report.points}, {"avg_error", report.avg}, {"max_error", report.max}, {"notes", report.notes},
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
                              {"scored", r.scored}, {"violation", r.violation}});
      j["workloads"].push_back(wj);
    }
    std::cout << j.dump(2) << '\n';
    return;
  }
  std::cout << fmt::format("Morphling artifact {}: each workload fitted on its profile{}; errors on the other trace rows{}\n\n",
                           args.artifact,
                           args.in_sample ? " and every trace row (in-sample)"
                                          : fmt::format(" + {} trace rows (prior weight {:g})", args.extra,
                                                        args.prior_weight),
                           args.paper_scope ? " in the paper's scope" : "");
  Table table({"workload", "family", "n", "avg%", "max%", "worst"});
  for (const FamilyError& f : report.families)
    table.add({f.workload, f.family, std::to_string(f.points), percent(f.avg), percent(f.max), f.worst});
  table.print(std::cout);
  if (args.rows) {
    std::cout << '\n';
    Table rows({"workload", "row", "family", "measured", "predicted", "error%", "status"});
    for (const WorkloadValidation& v : report.workloads)
      for (const ValidatedRow& r : v.rows) {
        std::string status = r.used_for_fit ? "fitted"
                             : r.profiled ? "profiled"
                             : r.row.iter_ms <= 0 ? "did not run"
                             : !r.scored ? "outside the paper's scope"
                                         : "";
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

void add_validate_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<ValidateArgs>();
  command_line::Command cmd =
      app.subcommand("validate", "fit and predict the Morphling artifact's measurements (paper Table 2)");
  cmd.option("--artifact", args->artifact, "the artifact folder (profile/, traces/)").required();
  cmd.option("--extra", args->extra, "trace rows per workload added to the fitting set").show_default().range(0, 1000);
  cmd.flag("--in-sample", args->in_sample, "fit on every trace row as well: the model's floor, not a prediction");
  command_line::Option rows = cmd.flag("--rows", args->rows, "list every trace row with its prediction");
  command_line::Option online =
      cmd.flag("--online", args->online, "the online-refit curve: refit to 0..3 unseen rows per family").excludes(rows);
  cmd.find("--in-sample").excludes(online);
  cmd.flag("--paper-scope", args->paper_scope,
           "score only the configurations of the paper's Table 2: one node for models under 1B parameters")
      .excludes(online);
  cmd.option("--random-rows", args->random_draws,
             "compare the rule's K rows with this many draws of K rows at random among the same candidates")
      .range(1, 100000)
      .excludes(online)
      .excludes(rows)
      .excludes(cmd.find("--in-sample"));
  cmd.option("--prior-weight", args->prior_weight,
             "weight of the prior around the profile's fit in the fits that add rows to it: the K rows' and "
             "the --online refits'")
      .show_default()
      .range(0.0, 1e6);
  cmd.option("--refit-threshold", args->refit_threshold,
             "with --online, refit as morphd does: only when the model mispredicts the rows observed so far by "
             "more than this fraction (morph.conf RefitErrorThreshold), keeping the refit only when it predicts "
             "them better; 0: refit after every row")
      .show_default()
      .range(0.0, 10.0)
      .needs(online);
  cmd.option("--orders", args->orders,
             "with --online, observe each family's rows in this many random orders besides the trace's and say "
             "how often each family's error halves")
      .range(1, 10000)
      .needs(online);
  cmd.on_run([&context, args] { run_validate(context, *args); });
}

}  // namespace morph::cli
