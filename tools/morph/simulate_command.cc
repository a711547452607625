// morph simulate: replay a workload trace on a simulated cluster under one policy or all
// of them (Table 4 of the Morphling paper).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "libmorph/artifact/artifact_spec.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/policy/policy.h"
#include "libmorph/sim/apps.h"
#include "libmorph/sim/known_length.h"
#include "libmorph/sim/metrics.h"
#include "libmorph/sim/partitions.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "tools/morph/commands.h"
#include "tools/morph/progress_line.h"
#include "tools/morph/table.h"

namespace morph::cli {
namespace {

namespace fs = std::filesystem;

struct SimulateArgs {
  std::string workload;
  std::string cluster = "8x8xa800";
  std::string partitions;  // slurm.conf PartitionName lines over the simulated nodes
  std::string policy = "morphling";
  std::string truth;
  double restart_penalty_s = -1;  // -1: morph.conf RestartPenaltySeconds
  std::string restart_costs;      // PATH=SECONDS,... over the penalty
  double payback_s = -1;          // ClusterView::payback_s; -1: the restart penalty, as morphd
  std::string restart_backoff;    // yes|no; "": morph.conf RestartBackoff
  double interval_s = -1;         // -1: morph.conf SchedulingIntervalSeconds
  std::vector<std::string> quotas;
  int fit_rows = 3;
  std::string jobs_csv;
  bool measured_only = false;
  bool heterogeneous = false;
  std::string job_length = "declared";
  double starvation_limit_s = -1;      // -1: morph.conf StarvationLimitSeconds
  double unknown_length_prior_s = -1;  // -1: morph.conf UnknownLengthPriorSeconds
  double refit_threshold = -1;         // -1: morph.conf RefitErrorThreshold
  std::string world_model = "fitted";  // the speeds the traces lack: fitted (the policies') or in-sample
};

std::map<std::string, int> parse_quotas(const std::vector<std::string>& items) {
  std::map<std::string, int> quotas;
  for (const std::string& item : items)
    for (const auto& [tenant, gpus] : parse_key_values(item, ',', "--quota"))
      quotas[tenant] = static_cast<int>(parse_int(gpus, fmt::format("--quota {}", tenant), 0, 1 << 24));
  return quotas;
}

std::string hours(double s) { return fmt::format("{:.2f}", s / 3600); }

// A figure over a class's finished jobs: none ("-", null) when none of them finished, where
// an average of nothing would read as 0 s, the best of all.
std::string over_finished(const sim::Summary& s, double value, const char* format = "{:.1f}") {
  return s.finished > 0 ? fmt::format(fmt::runtime(format), value) : "-";
}
nlohmann::json finished_json(const sim::Summary& s, double value) {
  return s.finished > 0 ? nlohmann::json(value) : nlohmann::json(nullptr);
}

// A makespan ends with the last job: none while a job never finished (the figure would be
// the last completion's, or 0 when none finished).
bool makespan_known(const sim::Report& r) { return r.never_finished.empty(); }

nlohmann::json summary_json(const sim::Summary& s) {
  return {{"jobs", s.jobs}, {"finished", s.finished}, {"avg_jct_s", finished_json(s, s.avg_jct_s)},
          {"p99_jct_s", finished_json(s, s.p99_jct_s)}, {"avg_queue_s", finished_json(s, s.avg_queue_s)},
          {"avg_progress_s", finished_json(s, s.avg_progress_s)},
          {"restarts_per_job", s.restarts_per_job}, {"gpu_hours", s.gpu_hours}, {"slow_share", s.slow_share}};
}

nlohmann::json report_json(const sim::Report& r) {
  return {{"policy", r.policy}, {"all", summary_json(r.all)}, {"guaranteed", summary_json(r.guaranteed)},
          {"best_effort", summary_json(r.best_effort)},
          {"makespan_s", makespan_known(r) ? nlohmann::json(r.makespan_s) : nlohmann::json(nullptr)},
          {"measured_runs", r.measured_runs}, {"predicted_runs", r.predicted_runs},
          {"predicted_share", r.predicted_share}, {"refits", r.refits}, {"refits_kept", r.refits_kept},
          {"never_finished", r.never_finished}, {"rounds", r.rounds},
          {"skipped_rounds", r.skipped_rounds}, {"wall_s", r.wall_s}};
}

std::string last_line(const sim::Report& r) {
  auto figure = [&](double v) { return r.all.finished > 0 ? fmt::format("{:.1f}", v) : std::string("none"); };
  return fmt::format("policy={} avg_jct_s={} p99_jct_s={} makespan_s={}", r.policy, figure(r.all.avg_jct_s),
                     figure(r.all.p99_jct_s), makespan_known(r) ? fmt::format("{:.1f}", r.makespan_s) : "none");
}

std::string speeds_line(const sim::Report& r) {
  return fmt::format("{} (re)starts at measured speeds, {} at predicted speeds ({:.1f}% of running time); {} online "
                     "refits ({} kept); {} rounds ({} skipped: nothing could change) in {:.2f} s",
                     r.measured_runs, r.predicted_runs, 100 * r.predicted_share, r.refits, r.refits_kept, r.rounds,
                     r.skipped_rounds, r.wall_s);
}

void print_one(const sim::Report& r) {
  Table t({"jobs", "n", "finished", "avg JCT s", "P99 JCT s", "avg queue s", "avg progress s", "restarts/job",
           "GPU-hours"});
  auto row = [&](const char* name, const sim::Summary& s) {
    if (s.jobs == 0) return;
    t.add({name, std::to_string(s.jobs), std::to_string(s.finished), over_finished(s, s.avg_jct_s),
           over_finished(s, s.p99_jct_s), over_finished(s, s.avg_queue_s), over_finished(s, s.avg_progress_s),
           fmt::format("{:.2f}", s.restarts_per_job), fmt::format("{:.1f}", s.gpu_hours)});
  };
  row("all", r.all);
  row("guaranteed", r.guaranteed);
  row("best-effort", r.best_effort);
  std::cout << "policy " << r.policy << '\n';
  t.print(std::cout);
  std::cout << (makespan_known(r) ? fmt::format("makespan {:.1f} s; {}\n", r.makespan_s, speeds_line(r))
                                  : fmt::format("no makespan: {} job(s) never finished; {}\n", r.never_finished.size(),
                                                speeds_line(r)));
  if (r.guaranteed.jobs > 0)
    std::cout << fmt::format("guaranteed jobs ran {:.1f}% of their time slower than their request would\n",
                             100 * r.guaranteed.slow_share);
}

// Table 4 of seed 000: hours and ratios to the first policy (morphling).
void print_comparison(const std::vector<sim::Report>& reports) {
  const sim::Report& base = reports.front();
  const bool split = base.guaranteed.jobs > 0 && base.best_effort.jobs > 0;
  std::vector<std::string> header{"policy", "avg JCT h", "P99 JCT h", "makespan h", "restarts/job", "predicted %"};
  if (split) header.insert(header.begin() + 3, {"guar. avg h", "BE avg h", "guar. slow %"});
  Table t(header);
  // Hours over a class's finished jobs, with the ratio to the first policy's where both have some.
  auto against = [](const sim::Summary& s, double x, const sim::Summary& first, double to) {
    if (s.finished == 0) return std::string("-");
    return hours(x) + (first.finished > 0 && to > 0 ? fmt::format(" ({:.2f}x)", x / to) : std::string());
  };
  auto ratio = [](double x, double to) { return to > 0 ? fmt::format(" ({:.2f}x)", x / to) : std::string(); };
  for (const sim::Report& r : reports) {
    std::vector<std::string> row{r.policy, against(r.all, r.all.avg_jct_s, base.all, base.all.avg_jct_s),
                                 against(r.all, r.all.p99_jct_s, base.all, base.all.p99_jct_s),
                                 !makespan_known(r) ? fmt::format("- ({} unfinished)", r.never_finished.size())
                                 : makespan_known(base) ? hours(r.makespan_s) + ratio(r.makespan_s, base.makespan_s)
                                                        : hours(r.makespan_s),
                                 fmt::format("{:.2f}", r.all.restarts_per_job),
                                 fmt::format("{:.1f}", 100 * r.predicted_share)};
    if (split)
      row.insert(row.begin() + 3, {against(r.guaranteed, r.guaranteed.avg_jct_s, base.guaranteed, base.guaranteed.avg_jct_s),
                                   against(r.best_effort, r.best_effort.avg_jct_s, base.best_effort, base.best_effort.avg_jct_s),
                                   fmt::format("{:.1f}", 100 * r.guaranteed.slow_share)});
    t.add(std::move(row));
  }
  t.print(std::cout);
}

void write_jobs_csv(std::ofstream& out, const std::string& path, const std::vector<sim::SimResult>& results) {
  out << "policy,name,guaranteed,gpus,submit_s,first_start_s,end_s,jct_s,queue_s,restarts,gpu_hours,predicted_s,slow_s,run_s\n";
  for (const sim::SimResult& r : results)
    for (const sim::JobResult& j : r.jobs)
      out << fmt::format("{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{},{:.4f},{:.1f},{:.1f},{:.1f}\n", r.policy, j.name,
                         j.guaranteed ? 1 : 0, j.requested_gpus, j.submit_s, j.first_start_s, j.end_s,
                         j.finished() ? j.jct_s() : -1.0, j.first_start_s >= 0 ? j.queue_s() : -1.0, j.restarts(),
                         j.gpu_seconds / 3600, j.predicted_seconds, j.slow_seconds, j.run_seconds);
  if (!out.flush()) throw Error(fmt::format("--jobs-csv: writing {} failed", quote(path)));
}

void run_simulate(Context& context, const SimulateArgs& args) {
  context.resolve_paths();
  const MorphConfig& config = context.config();
  std::vector<std::string> policies;
  if (args.policy == "all")
    policies = policy::policy_names();
  else
    policies.push_back(policy::make_policy(args.policy)->name());  // validates the name early

  // Opened before the simulation, which may run for minutes: a path that cannot be
  // written fails first.
  std::ofstream jobs_csv;
  if (!args.jobs_csv.empty()) {
    jobs_csv.open(args.jobs_csv);
    if (!jobs_csv) throw Error(fmt::format("--jobs-csv: cannot write {}", quote(args.jobs_csv)));
  }
  const std::vector<policy::NodeState> nodes = policy::nodes_from_spec(args.cluster, config.cluster, "--cluster");
  int gpus = 0;
  for (const policy::NodeState& n : nodes) gpus += n.type.gpus;

  std::string artifact_dir;
  if (!args.truth.empty()) {
    if (std::error_code ec; !fs::is_directory(args.truth, ec)) throw Error(fmt::format("--truth: {} is not a folder", quote(args.truth)));
    const fs::path parent = option_folder(args.truth).parent_path();
    if (std::error_code ec; fs::is_directory(parent / "profile", ec)) artifact_dir = parent.string();
  }
  const ArtifactSpec spec = load_artifact_spec(context.spec_path);
  const PerfStore store = PerfStore::load_dir(config.perf_model_dir);
  const std::map<std::string, sim::App> apps =
      sim::artifact_apps(spec, context.catalog(), config, artifact_dir, store, args.fit_rows);
  // The world the policies do not see: where the traces lack a configuration, models
  // fitted on every trace row.
  const bool in_sample_world = args.world_model == "in-sample";
  if (in_sample_world && artifact_dir.empty())
    throw Error("--world-model in-sample needs --truth to be the traces/ folder of a Morphling artifact (profile/ beside it)");
  const std::map<std::string, sim::App> world_apps =
      in_sample_world ? sim::artifact_apps(spec, context.catalog(), config, artifact_dir, store, 0, true)
                      : std::map<std::string, sim::App>{};
  std::vector<sim::SimJob> jobs;
  for (const sim::TraceJob& row : sim::read_workload(args.workload)) jobs.push_back(sim::sim_job(row, apps));
  std::optional<sim::SimPartitions> partitions;
  if (!args.partitions.empty()) {
    partitions.emplace(sim::SimPartitions::read(args.partitions, nodes, config.cluster));
    partitions->bind(jobs);
  } else {
    for (const sim::SimJob& j : jobs)
      if (!j.partitions.empty())
        throw Error(fmt::format("{}: job {} names partition {}, but no --partitions file says what it holds", j.where,
                                quote(j.state.id), quote(j.partitions)));
  }
  auto profiles = [&](const std::map<std::string, sim::App>& of) {
    return partitions ? partitions->with_bound_apps(sim::profiles_of(of), jobs) : sim::profiles_of(of);
  };
  const sim::JobLength job_length = sim::parse_job_length(args.job_length, "--job-length");
  sim::declare_lengths(jobs, job_length);

  sim::TraceTruth truth;
  if (!args.truth.empty()) {
    std::map<std::string, ArtifactWorkload> workloads;
    for (const auto& [name, app] : apps) workloads.emplace(name, app.artifact);
    truth = sim::TraceTruth::load(args.truth, workloads, spec, config.cluster);
  }

  sim::SimOptions options;
  options.restart = args.restart_penalty_s >= 0 ? policy::RestartCosts::uniform(args.restart_penalty_s)
                                                 : config.policy.restart_costs;
  if (!args.restart_costs.empty())
    options.restart = policy::parse_restart_costs(args.restart_costs, "--restart-costs", options.restart);
  // morphd waits RestartPenaltySeconds (view_builder.cc); so does the simulation unless told.
  options.payback_s = args.payback_s >= 0 ? args.payback_s
                      : args.restart_penalty_s >= 0 ? args.restart_penalty_s
                                                    : config.policy.restart_penalty_s;
  options.restart_backoff = args.restart_backoff.empty() ? config.policy.restart_backoff : args.restart_backoff == "yes";
  options.min_reconfigure_gain = config.policy.min_reconfigure_gain;
  options.interval_s = args.interval_s > 0 ? args.interval_s : config.policy.scheduling_interval_s;
  options.quota_gpus = parse_quotas(args.quotas);
  options.heterogeneous_jobs = args.heterogeneous;
  options.starvation_limit_s =
      args.starvation_limit_s >= 0 ? args.starvation_limit_s : config.policy.starvation_limit_s;
  options.unknown_length_prior_s =
      args.unknown_length_prior_s > 0 ? args.unknown_length_prior_s : config.policy.unknown_length_prior_s;
  // morphd refits at RefitErrorThreshold (daemon/scheduler.cc); so does the simulation unless told.
  options.refit.error_threshold = args.refit_threshold >= 0 ? args.refit_threshold : config.policy.refit_error_threshold;
  options.refit.max_age_s = config.policy.refit_point_max_age_s;  // as morphd forgets, in simulated time

  std::optional<policy::PlanOracle> world;
  if (in_sample_world) world.emplace(profiles(world_apps), config.memory, std::max(config.max_gpus_per_job, gpus));
  policy::PlanOracle oracle(profiles(apps), config.memory, std::max(config.max_gpus_per_job, gpus));
  if (args.measured_only) {
    if (args.truth.empty()) throw Error("--measured-only needs --truth");
    oracle.restrict_to([&truth](const std::string& app, const std::string& gpu_type, const ExecutionPlan& plan,
                                const std::vector<int>& gpus_per_node) {
      return truth.lookup(app, gpu_type, plan, gpus_per_node) > 0;
    });
  }
  std::vector<sim::SimResult> results;
  std::vector<sim::Report> reports;
  ProgressLine progress;
  for (const std::string& name : policies) {
    if (progress.enabled())
      options.on_round = [&progress, &name](const sim::SimProgress& p) {
        progress.update([&] {
          return fmt::format("morph simulate: {}: {:.1f} h simulated, {} of {} jobs finished, {} rounds", name,
                             p.now_s / 3600, p.finished, p.jobs, p.rounds);
        });
      };
    auto p = policy::make_policy(name);
    results.push_back(sim::simulate(jobs, nodes, *p, oracle, truth, options, world ? &*world : nullptr));
    reports.push_back(sim::summarize(results.back()));
  }
  progress.clear();
  if (!args.jobs_csv.empty()) write_jobs_csv(jobs_csv, args.jobs_csv, results);

  if (context.json) {
    nlohmann::json j{{"workload", args.workload}, {"jobs", jobs.size()}, {"cluster", args.cluster}, {"gpus", gpus},
                     {"restart_s",
                      {{"start", options.restart.start_s}, {"inplace", options.restart.inplace_s},
                       {"shrink", options.restart.shrink_s}, {"requeue", options.restart.requeue_s}}},
                     {"interval_s", options.interval_s}, {"payback_s", options.payback_s},
                     {"restart_backoff", options.restart_backoff},
                     {"min_reconfigure_gain", options.min_reconfigure_gain},
                     {"job_length", sim::to_string(job_length)}, {"starvation_limit_s", options.starvation_limit_s},
                     {"unknown_length_prior_s", options.unknown_length_prior_s},
                     {"refit_threshold", options.refit.error_threshold},
                     {"heterogeneous_jobs", options.heterogeneous_jobs},
                     {"truth", args.truth}, {"truth_configurations", truth.size()},
                     {"world_model", args.world_model}};
    if (partitions) j["partitions"] = args.partitions;
    for (const auto& [name, app] : apps) j["models"][name] = app.model_source;
    for (const auto& [name, app] : world_apps) j["world_models"][name] = app.model_source;
    for (const sim::Report& r : reports) j["policies"].push_back(report_json(r));
    std::cout << j.dump(2) << '\n';
    return;
  }
  const policy::RestartCosts& cost = options.restart;
  const std::string restart = cost == policy::RestartCosts::uniform(cost.start_s)
                                  ? fmt::format("{:g} s", cost.start_s)
                                  : fmt::format("start {:g} s, in place {:g} s, shrink {:g} s, requeue {:g} s",
                                                cost.start_s, cost.inplace_s, cost.shrink_s, cost.requeue_s);
  std::cout << fmt::format("workload {}: {} jobs on {} ({} GPUs); restart penalty {}, a round every {:g} s\n",
                           args.workload, jobs.size(), args.cluster, gpus, restart, options.interval_s);
  std::cout << fmt::format("job lengths: {}; a job waiting {:g} s is overdue{}\n", sim::to_string(job_length),
                           options.starvation_limit_s, options.starvation_limit_s > 0 ? "" : " (never: 0)");
  std::cout << (options.refit.error_threshold > 0
                    ? fmt::format("online refit: the policy's models are refitted when they mispredict their jobs "
                                  "by more than {:g}%\n",
                                  100 * options.refit.error_threshold)
                    : std::string("online refit: none (--refit-threshold 0)\n"));
  if (partitions) {
    const auto bound = std::count_if(jobs.begin(), jobs.end(),
                                     [](const sim::SimJob& j) { return sim::measured_app(j.state.app) != j.state.app; });
    std::cout << fmt::format("partitions: {}; {} of {} jobs may not use every node\n", args.partitions, bound,
                             jobs.size());
  }
  if (options.heterogeneous_jobs)
    std::cout << "heterogeneous jobs: a best-effort job may span idle GPUs of a second type (JABAS)\n";
  if (!options.restart_backoff || options.payback_s <= 0)
    std::cout << "restart backoff: none (a job gives up GPUs to another's growth however often it restarted)\n";
  std::cout << (args.truth.empty() ? std::string("speeds: the performance model (no --truth)\n")
                                   : fmt::format("speeds: {} measured configurations from {}, {} elsewhere\n",
                                                 truth.size(), args.truth,
                                                 in_sample_world ? "models fitted on every trace row (which no policy sees)"
                                                 : artifact_dir.empty()
                                                     ? "the policies' models (no profile folder beside --truth: none fitted)"
                                                     : "the fitted model"))
            << '\n';
  if (reports.size() == 1) {
    print_one(reports.front());
  } else {
    print_comparison(reports);
    std::cout << '\n';
    for (const sim::Report& r : reports) std::cout << r.policy << ": " << speeds_line(r) << '\n';
  }
  for (const sim::Report& r : reports)
    if (!r.never_finished.empty())
      std::cerr << fmt::format("morph simulate: warning: under {}, {} job(s) never finished (first: {})\n", r.policy,
                               r.never_finished.size(), r.never_finished.front());
  for (const sim::Report& r : reports) std::cout << last_line(r) << '\n';
}

}  // namespace

void add_simulate_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<SimulateArgs>();
  command_line::Command cmd =
      app.subcommand("simulate", "replay a workload trace on a simulated cluster under a policy");
  cmd.option("--workload", args->workload, "workload CSV (the Morphling artifact's format)").required();
  cmd.option("--cluster", args->cluster, "nodes, e.g. 8x8xa800 or 4x8xa100+4x8xv100").show_default();
  cmd.option("--partitions", args->partitions,
             "slurm.conf file whose PartitionName lines split the simulated nodes (node001, node002, ... in "
             "--cluster's order); the workload's partition column names each job's, several joined by '+'");
  cmd.option("--policy", args->policy,
             "morphling, morphling-e, morphling-r, morphling-n, sia, synergy, antman, fifo or all")
      .show_default();
  cmd.option("--truth", args->truth, "traces folder of measured iteration times (e.g. morphling-artifact/traces)");
  cmd.option("--restart-penalty", args->restart_penalty_s,
             "seconds per start and restart, every path (default: morph.conf)")
      .range(0.0, 1e6);
  cmd.option("--restart-costs", args->restart_costs,
             "seconds per path over --restart-penalty, e.g. start=2,inplace=4,shrink=2,requeue=15");
  cmd.option("--payback", args->payback_s,
             "seconds a reconfigured job runs before it may grow again, as under morphd "
             "(default: the restart penalty, as morphd; 0 as the artifact's simulator)")
      .range(0.0, 1e9);
  cmd.option("--restart-backoff", args->restart_backoff,
             "yes: a job restarted n times gives up GPUs to another job's growth only after n --payback "
             "waits of running, as under morphd; no: at once (default: morph.conf RestartBackoff, yes)")
      .one_of({"yes", "no"});
  cmd.option("--interval", args->interval_s, "seconds between scheduling rounds (default: morph.conf)")
      .range(1.0, 1e6);
  cmd.option("--quota", args->quotas, "guaranteed GPUs of a tenant, TENANT=GPUS (repeatable)");
  cmd.option("--fit-rows", args->fit_rows, "trace rows added to each profile when fitting the models")
      .show_default()
      .range(0, 1000);
  cmd.option("--jobs-csv", args->jobs_csv, "write one row per job and policy to this file");
  cmd.option("--job-length", args->job_length,
             "what the policies know of a job's length: exact (the trace's steps), declared (a Slurm time "
             "limit: the trace's duration rounded up to a usual limit) or unknown (estimated from attained service)")
      .show_default();
  cmd.option("--starvation-limit", args->starvation_limit_s,
             "seconds without GPUs after which a job is overdue and must run (0: never; default: morph.conf)")
      .range(0.0, 1e9);
  cmd.option("--unknown-length-prior", args->unknown_length_prior_s,
             "expected running seconds of a job of unknown length that has run less than that (default: morph.conf)")
      .range(1.0, 1e9);
  cmd.option("--refit-threshold", args->refit_threshold,
             "refit the models the policies plan with, as morphd does, when they mispredict the iteration "
             "times their jobs have reported by more than this fraction (0: never; default: morph.conf "
             "RefitErrorThreshold)")
      .range(0.0, 10.0);
  cmd.option("--world-model", args->world_model,
             "speeds of the configurations the --truth traces lack: fitted (the models the policies start "
             "with: the profile and --fit-rows trace rows) or in-sample (models fitted on every trace row, "
             "which no policy sees)")
      .show_default()
      .one_of({"fitted", "in-sample"});
  cmd.flag("--heterogeneous", args->heterogeneous,
           "Morphling may give a best-effort job idle GPUs of a second type as one data-parallel job "
           "(JABAS; morph.conf HeterogeneousJobs); off by default, as in Table 4");
  cmd.flag("--measured-only", args->measured_only,
           "policies may move jobs only to configurations the --truth traces measured");
  cmd.on_run([&context, args] { run_simulate(context, *args); });
}

}  // namespace morph::cli
