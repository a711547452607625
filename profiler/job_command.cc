// morph-profile job: a model's iteration time under the configurations Morphling A.3
// prescribes, measured through morphrun on the allocation at hand, written as a profile
// folder and fitted with the library call `morph fit --profile` makes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "libmorph/artifact/artifact_rows.h"
#include "libmorph/artifact/validation.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/perf/profile_sampling.h"
#include "libmorph/request/limits.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"
#include "profiler/commands.h"
#include "profiler/job_run.h"
#include "profiler/profile_folder.h"

namespace morph::profile {
namespace {

struct JobArgs {
  std::string model;
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  int micro_batch = 1;
  int iterations = 5;
  int warmup = 2;
  int held_out = 0;
  double timeout_s = 600;
  std::string out;
  bool save = false;
  bool dry_run = false;
  int nodes = 0;
  int gpus_per_node = 0;
  std::string node_type;
  std::string catalog;
  std::string morphrun = "morphrun";
  std::vector<std::string> srun_options;
  std::vector<std::string> command;
};

// What the runs share: the job, the allocation and where things go.
struct Setup {
  MorphConfig config;
  std::optional<Catalog> catalog;
  ModelSpec model;
  ArtifactWorkload workload;
  ArtifactSpec spec;  // node type and CPUs per GPU of the runs, for fit_workload
  const NodeType* node = nullptr;
  ProfileAllocation allocation;
  std::string out;
};

// 0 when unset or 0 (SLURM_GPUS_ON_NODE=0 on a node Slurm gave no GPUs): the caller's
// fallback then applies.
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  return static_cast<int>(parse_int(v, name, 0, 1 << 20));
}

const NodeType& find_node_type(const JobArgs& args, const Cluster& cluster) {
  std::string name = args.node_type;
  if (name.empty()) {
    const char* host = std::getenv("SLURMD_NODENAME");
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    const std::string node = host != nullptr ? host : list != nullptr ? list : "";
    for (const NodeRecord& r : cluster.nodes())
      if (!node.empty() && node.find_first_of("[,") == std::string::npos && r.name == node) name = r.node_type;
    if (name.empty())
      throw Error("--node-type: not given, and no morph.conf Node record names this job's first node "
                  "($SLURMD_NODENAME or a one-node $SLURM_JOB_NODELIST)");
  }
  const NodeType* n = cluster.find_node_type(name);
  if (n == nullptr) throw Error(fmt::format("--node-type: morph.conf has no NodeType {}", quote(name)));
  return *n;
}

Setup make_setup(const Context& context, const JobArgs& args) {
  if (args.command.empty()) throw Error("job: no trainer command: give it after --, e.g. -- python train.py");
  Setup s;
  s.config = load_morph_conf(morph_conf_path(context.config_path));
  std::string catalog = args.catalog;
  if (catalog.empty()) catalog = std::getenv("MORPH_CATALOG") != nullptr ? std::getenv("MORPH_CATALOG") : "";
  if (catalog.empty()) catalog = std::string(MORPH_PKGDATADIR) + "/models.json";
  s.catalog = Catalog::load_file(catalog);
  s.model = s.catalog->resolve(args.model, "--model");
  s.node = &find_node_type(args, s.config.cluster);
  s.allocation.nodes = args.nodes > 0 ? args.nodes : env_int("SLURM_JOB_NUM_NODES");
  if (s.allocation.nodes == 0) {
    if (!args.dry_run) throw Error("job: not inside an allocation (no SLURM_JOB_NUM_NODES): use sbatch or salloc");
    s.allocation.nodes = 1;
  }
  s.allocation.gpus_per_node = args.gpus_per_node > 0 ? args.gpus_per_node : env_int("SLURM_GPUS_ON_NODE");
  if (s.allocation.gpus_per_node == 0) s.allocation.gpus_per_node = s.node->gpus;
  // Before any run: the fit reads the runs back on nodes of this type.
  if (s.allocation.gpus_per_node > s.node->gpus)
    throw Error(fmt::format("job: {} GPUs per node ({}) but NodeType {} has {}", s.allocation.gpus_per_node,
                            args.gpus_per_node > 0 ? "--gpus-per-node" : "SLURM_GPUS_ON_NODE", s.node->name,
                            s.node->gpus));
  ArtifactWorkload& w = s.workload;
  w.name = w.profile = s.model.name;
  w.model = args.model;  // a catalog name or an inline spec, as fit_workload resolves it
  w.global_batch = w.profile_global_batch = args.batch;
  w.micro_batch = args.micro_batch;
  w.seq_len = args.seq > 0 ? args.seq : s.model.seq_len;
  s.spec.node_type = s.node->name;
  s.spec.cpus_per_gpu = std::max(1, s.node->cpus / std::max(1, s.node->gpus));
  s.out = args.out.empty() ? "morph-profile-" + s.model.name : args.out;
  return s;
}

// The plan morphrun runs: the sample's shape, batched as the fit will read it back.
ExecutionPlan run_plan(const Setup& s, const ProfileConfig& c) {
  return artifact_plan(artifact_exec_plan(c.plan), c.gpus(), s.workload.global_batch, s.workload, describe(c));
}

std::vector<std::string> srun_argv(const JobArgs& args, const Setup& s, const ProfileConfig& c,
                                   const std::string& metrics) {
  std::vector<std::string> argv{"srun", "--mpi=pmix", "-N", std::to_string(c.nodes), "-n", std::to_string(c.gpus()),
                                "--ntasks-per-node=" + std::to_string(c.gpus_per_node)};
  argv.insert(argv.end(), args.srun_options.begin(), args.srun_options.end());
  std::string plan = to_string(run_plan(s, c));
  std::replace(plan.begin(), plan.end(), ' ', ',');
  for (const std::string& a : {args.morphrun, std::string("--plan"), plan, std::string("--framework"),
                               std::string("torch"), std::string("--mpi-trainer"), std::string("--metrics"), metrics,
                               std::string("--")})
    argv.push_back(a);
  argv.insert(argv.end(), args.command.begin(), args.command.end());
  return argv;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Runs every configuration; the ones that fail are reported and left out.
std::vector<MeasuredConfig> measure(const JobArgs& args, const Setup& s, const std::vector<ProfileConfig>& configs,
                                    const std::string& tag) {
  const std::string runs = s.out + "/runs";
  std::filesystem::create_directories(runs);
  std::vector<MeasuredConfig> measured;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const std::string base = fmt::format("{}/{}{}", runs, tag, i + 1);
    JobRunSpec spec;
    spec.metrics_path = std::filesystem::absolute(base + ".metrics").string();
    spec.log_path = base + ".log";
    spec.argv = srun_argv(args, s, configs[i], spec.metrics_path);
    spec.iterations_wanted = args.warmup + args.iterations;
    spec.timeout_s = args.timeout_s;
    JobRunResult r = run_profile_step(spec);
    if (!r.failure.empty()) {
      std::cerr << fmt::format("morph-profile: {}: skipped: {}\n", describe(configs[i]), r.failure);
      continue;
    }
    r.iteration_s.resize(static_cast<std::size_t>(spec.iterations_wanted));
    const double ms = 1e3 * median_after_warmup(r.iteration_s, args.warmup);
    std::cout << fmt::format("{:<40} {:>10.2f} ms  ({:.1f} s)\n", describe(configs[i]), ms, r.wall_s) << std::flush;
    measured.push_back({configs[i], ms});
  }
  return measured;
}

double predicted_ms(const Setup& s, const WorkloadValidation& v, const ProfileConfig& c) {
  const Allocation a = uniform_allocation(s.config.cluster, *s.node, c.nodes, c.gpus_per_node, s.spec.cpus_per_gpu);
  const Workload job{v.model, s.workload.global_batch, s.workload.seq_len};
  return predict_iteration(iteration_terms(job, run_plan(s, c), a, v.forward), v.fit.params).iter_ms;
}

void report_held_out(const Setup& s, const WorkloadValidation& v, const std::vector<MeasuredConfig>& held) {
  if (held.empty()) return;
  std::cout << "\nheld out (not fitted):\n";
  double sum = 0;
  for (const MeasuredConfig& m : held) {
    const double fitted = predicted_ms(s, v, m.config);
    const double error = (fitted - m.iter_ms) / m.iter_ms;
    sum += std::abs(error);
    std::cout << fmt::format("{:<40} measured {:>10.2f} ms  fitted {:>10.2f} ms  error {:+.1f}%\n",
                             describe(m.config), m.iter_ms, fitted, 100 * error);
  }
  std::cout << fmt::format("held-out mean absolute error {:.1f}% over {} configurations\n",
                           100 * sum / static_cast<double>(held.size()), held.size());
}

void save_model(const Setup& s, const WorkloadValidation& v) {
  if (s.config.perf_model_dir.empty()) throw Error("--save: morph.conf sets no PerfModelDir");
  const std::string path = s.config.perf_model_dir + "/" + v.model.name + ".json";
  replace_text_file(path, perf_model_to_json(v.model.name, fitted_perf_model(v)), "--save");
  std::cout << "saved " << path << '\n';
}

void run_job(const Context& context, const JobArgs& args) {
  const auto began = std::chrono::steady_clock::now();
  const Setup s = make_setup(context, args);
  const std::vector<ProfileConfig> configs = choose_profile_configs(s.model, args.batch, s.allocation);
  const std::vector<ProfileConfig> held =
      held_out_profile_configs(s.model, args.batch, s.allocation, configs, args.held_out);
  std::cout << fmt::format("{} with global batch {} on {} node(s) x {} GPUs ({}): {} configurations{}\n",
                           s.model.name, args.batch, s.allocation.nodes, s.allocation.gpus_per_node, s.node->name,
                           configs.size(), held.empty() ? "" : fmt::format(", {} held out", held.size()));
  if (args.dry_run) {
    for (const ProfileConfig& c : configs) std::cout << joined(srun_argv(args, s, c, s.out + "/runs/N.metrics")) << '\n';
    for (const ProfileConfig& c : held)
      std::cout << "held out: " << joined(srun_argv(args, s, c, s.out + "/runs/N.metrics")) << '\n';
    return;
  }
  const std::vector<MeasuredConfig> measured = measure(args, s, configs, "");
  if (std::ssize(measured) < kProfileConfigs)
    throw Error(fmt::format("job: only {} of {} configurations ran; {} are needed to fit (logs in {}/runs)",
                            measured.size(), configs.size(), kProfileConfigs, s.out));
  write_profile_folder(s.out, {s.model, args.batch, s.workload.seq_len, s.node->name, s.spec.cpus_per_gpu}, measured);
  const WorkloadValidation v =
      fit_workload(s.out, {}, s.workload, s.spec, *s.catalog, s.config, {});
  std::cout << fmt::format("\nprofile {} fitted: RMSLE {:.4f}{}\n", s.out, v.fit.rmsle,
                           v.fit.converged ? "" : " (solver stopped before convergence)");
  for (const std::string& note : v.notes) std::cout << "note: " << note << '\n';
  double sum = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double error = v.fit.rel_errors[i];
    sum += std::abs(error);
    std::cout << fmt::format("{:<40} measured {:>10.2f} ms  fitted {:>10.2f} ms  error {:+.1f}%\n",
                             describe(measured[i].config), measured[i].iter_ms, measured[i].iter_ms * (1 + error),
                             100 * error);
  }
  std::cout << fmt::format("in-sample mean absolute error {:.1f}%\n", 100 * sum / static_cast<double>(measured.size()));
  report_held_out(s, v, measure(args, s, held, "held-out-"));
  if (args.save) save_model(s, v);
  std::cout << fmt::format("profiling wall time {:.1f} s\n",
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
}

}  // namespace

void add_job_command(command_line::Command& app, Context& context) {
  auto args = std::make_shared<JobArgs>();
  command_line::Command cmd = app.subcommand(
      "job", "measure a model's iteration time under 7+ plans (3 with ZeRO-Offload) through morphrun and fit it");
  cmd.option("--model", args->model, "catalog model or inline spec (layers=..,hidden=..,heads=..,seq=..,vocab=..)")
      .required();
  cmd.option("--batch", args->batch, "global batch of the trainer").required().range(1, 1 << 24);
  cmd.option("--seq", args->seq, "sequence length (default: the model's)").range(1, 1 << 24);
  cmd.option("--micro-batch", args->micro_batch, "micro-batch size of the runs").show_default().range(1, 1 << 20);
  cmd.option("--iterations", args->iterations, "measured iterations per configuration (K)")
      .show_default()
      .range(1, 10000);
  cmd.option("--warmup", args->warmup, "warm-up iterations left out (W)").show_default().range(0, 10000);
  cmd.option("--held-out", args->held_out,
             "also run N configurations outside the sample and report the fitted model's error on them")
      .show_default()
      .range(0, 16);
  cmd.option("--timeout", args->timeout_s, "seconds one run may take before it is skipped")
      .show_default()
      .range(1.0, 86400.0);
  cmd.option("--out", args->out, "profile folder (default ./morph-profile-MODEL)");
  cmd.flag("--save", args->save, "store the fitted model in morph.conf's PerfModelDir as MODEL.json");
  cmd.flag("--dry-run", args->dry_run, "print the configurations and their srun commands, run nothing");
  cmd.option("--nodes", args->nodes, "nodes (default $SLURM_JOB_NUM_NODES)").range(1, kMaxProfileNodes);
  cmd.option("--gpus-per-node", args->gpus_per_node,
             "GPUs per node (default $SLURM_GPUS_ON_NODE or the node type's)")
      .range(1, MORPH_MAX_GPUS_PER_NODE);
  cmd.option("--node-type", args->node_type, "morph.conf NodeType (default: the Node record of the job's node)");
  cmd.option("--catalog", args->catalog, "models.json (default $MORPH_CATALOG or the installed one)");
  cmd.option("--morphrun", args->morphrun, "morphrun to start").show_default();
  cmd.option("--srun-option", args->srun_options, "one more srun option (repeatable), e.g. --srun-option=-pgpu")
      .no_extra_args();
  cmd.option("command", args->command, "the trainer and its arguments, after --");
  cmd.on_run([&context, args] { run_job(context, *args); });
}

}  // namespace morph::profile
