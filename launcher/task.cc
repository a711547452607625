#include "launcher/task.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "config.h"
#include "launcher/binding.h"
#include "launcher/checkpoint_prepare.h"
#include "launcher/master_addr.h"
#include "launcher/morph_config.h"
#include "launcher/morphd_report.h"
#include "launcher/save_request.h"
#include "launcher/supervisor.h"
#include "libmorph/launch/driver_contract.h"
#include "libmorph/launch/framework.h"
#include "libmorph/launch/metrics_line.h"
#include "libmorph/launch/plan_source.h"
#include "libmorph/launch/precision.h"
#include "libmorph/launch/rank_env.h"
#include "libmorph/launch/step_layout.h"
#include "libmorph/record/plan_env.h"
#include "libmorph/state/layout.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph::launcher {
namespace {

namespace fs = std::filesystem;
using launch::Environment;

bool in_slurm_step(const Environment& env) { return env.count("SLURM_JOB_ID") && env.count("SLURM_STEP_ID"); }

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// A record for a step that has none (--plan, --seq): what the rendering and MORPH_* need.
JobRecord record_for(const launch::PlanSource& source, const launch::StepLayout& step, std::int64_t seq) {
  if (source.record) {
    if (seq != 0 && seq != source.record->request.seq_len)
      throw Error(fmt::format("--seq {} is not the job's sequence length, {} (its record)", seq,
                              source.record->request.seq_len));
    return *source.record;
  }
  JobRecord r;
  r.request.seq_len = seq;
  r.request.global_batch = static_cast<int>(source.plan.global_batch());
  r.current.plan = source.plan;
  r.current.nodes = static_cast<int>(step.nodes.size());
  r.current.gpus_per_node = step.ranks_per_node;
  return r;
}

std::vector<std::string> framework_dirs(const Options& o) {
  if (!o.frameworks_dir.empty()) return {o.frameworks_dir};
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("MORPH_FRAMEWORKS"); env != nullptr && *env != '\0') dirs.emplace_back(env);
  dirs.emplace_back(std::string(MORPH_PKGDATADIR) + "/frameworks");
  return dirs;
}

std::string framework_name(const Options& o, const JobRecord& r, bool has_record) {
  if (!o.framework.empty()) return o.framework;
  return has_record ? to_string(r.request.framework) : "torch";
}

// The job's metrics file: --metrics, else $SLURM_SUBMIT_DIR/morph-<job>.metrics in a job.
std::string metrics_path(const Options& o, const Environment& env, const launch::StepLayout& step) {
  if (!o.metrics_file.empty()) return o.metrics_file;
  if (step.job_id == 0) return {};
  const auto dir = env.find("SLURM_SUBMIT_DIR");
  return fmt::format("{}/morph-{}.metrics", dir != env.end() ? dir->second : ".", step.job_id);
}

// The job whose iterations go to morphd: the step's, else the allocation's (morphrun
// --hosts inside salloc); 0 outside Slurm.
std::uint32_t report_job_id(const launch::StepLayout& step, const Environment& env) {
  if (step.job_id != 0) return step.job_id;
  const auto it = env.find("SLURM_JOB_ID");
  if (it == env.end()) return 0;
  try {
    return static_cast<std::uint32_t>(parse_int(it->second, "SLURM_JOB_ID", 1, 0xffffffffLL));
  } catch (const Error&) {
    return 0;
  }
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string signal_name(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : std::to_string(signal);
}

}  // namespace

int run_task(const Options& o) {
  // Under morphrun --driver srun named the step, which SLURM_JOB_NAME says in its tasks:
  // the trainer sees the job's own name, as without the driver.
  const Environment inherited = launch::process_environment();
  Environment env = launch::own_driver_variables(inherited);
  for (const auto& [name, value] : inherited)  // another job's driver's: not for the trainer either
    if (name.starts_with("MORPH_") && !env.count(name)) unsetenv(name.c_str());
  if (const auto job_name = env.find("MORPH_JOB_NAME"); job_name != env.end()) {
    setenv("SLURM_JOB_NAME", job_name->second.c_str(), 1);
    env["SLURM_JOB_NAME"] = job_name->second;
  }
  const MorphConfig config = load_launcher_config(o.config_path);
  block_supervised_signals(config.checkpoint_signal);

  // Everything that can refuse the start, before anything starts.
  const launch::PlanSource source = launch::resolve_plan(env, o.plan);
  const bool slurm = o.hosts.empty() && in_slurm_step(env);
  const launch::StepLayout step =
      slurm ? launch::slurm_step_layout(env, o.per_node, source.plan.gpus())
            : launch::host_step_layout(o.hosts.empty() ? std::vector<std::string>{this_host()} : o.hosts, o.node_rank,
                                       source.plan.gpus());
  launch::check_plan_fits(source.plan, source.record ? &source.record->current : nullptr, step);
  if (slurm && o.mpi_trainer) launch::check_mpi_trainer_tasks(step);
  const JobRecord record = record_for(source, step, o.seq);
  // A heterogeneous plan gives this node's ranks its GPU type's GA and workers.
  const launch::RankBatch batch =
      launch::rank_batch(record.current, record.current.heterogeneous()
                                             ? config.cluster.gpu_of_node(step.nodes[static_cast<std::size_t>(step.node_rank)])
                                             : std::string{});
  const launch::Framework framework = launch::Framework::find(framework_name(o, record, source.record.has_value()),
                                                              framework_dirs(o));
  std::optional<launch::CheckpointChoice> checkpoint;
  if (!o.checkpoint_dir.empty())
    checkpoint = prepare_checkpoint(o, env, record.request.model, state::layout_of(source.plan), slurm,
                                    config.checkpoint_timeout_s);

  // A private folder for the metrics FIFOs and generated files.
  std::string scratch = fmt::format("{}/morphrun.XXXXXX", std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  if (mkdtemp(scratch.data()) == nullptr)
    throw Error(fmt::format("cannot create a folder in {}: {}", fs::path(scratch).parent_path().string(),
                            std::strerror(errno)));
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{scratch};

  launch::RenderContext render{record, o.checkpoint_dir, checkpoint ? checkpoint->resume : std::string{}, scratch,
                               launch::computes_in_bf16(config.cluster, record.current)};
  const launch::Rendering rendering = framework.render(render);
  for (const auto& [path, content] : rendering.files) {
    std::ofstream out(path);
    out << content;
    if (!out.flush()) throw Error(fmt::format("cannot write {}", path));
  }

  const std::string master = master_address(step.nodes.front(), slurm);
  const int port = launch::master_port(step.job_id, step.step_id, config.master_ports);
  const std::vector<launch::RankBinding> bindings = step_bindings(step, env);
  std::vector<ChildSpec> children;
  int rank0_child = -1;
  for (std::size_t i = 0; i < step.ranks.size(); ++i) {
    const int rank = step.ranks[i];
    const launch::RankBinding binding = bindings[i];
    ChildSpec child;
    child.argv = o.command;
    child.argv.insert(child.argv.end(), rendering.args.begin(), rendering.args.end());
    child.env = plan_environment(record);
    const launch::RankSettings settings{master, port, std::max<int>(1, static_cast<int>(binding.cpus.size())), batch};
    for (auto& kv : launch::rank_environment(source.plan, step, rank, settings)) child.env.push_back(std::move(kv));
    child.metrics_fifo = fmt::format("{}/metrics.{}", scratch, rank);
    make_fifo(child.metrics_fifo);
    child.env.emplace_back("MORPH_METRICS", child.metrics_fifo);
    child.env.emplace_back("MORPH_CHECKPOINT_SIGNAL", signal_name(config.checkpoint_signal));
    if (!o.checkpoint_dir.empty()) child.env.emplace_back("MORPH_CHECKPOINT_DIR", o.checkpoint_dir);
    if (checkpoint) child.env.emplace_back("MORPH_CHECKPOINT", checkpoint->resume);
    for (const auto& kv : rendering.env) child.env.push_back(kv);
    child.before_exec = [binding] { bind_this_process(binding); };
    if (rank == 0) rank0_child = static_cast<int>(i);
    children.push_back(std::move(child));
  }

  // Rank 0's lines go to the job's metrics file (morphrun(1), METRICS); the others'
  // are read and dropped, so that no trainer blocks on a full FIFO.
  const std::string metrics_file = rank0_child >= 0 ? metrics_path(o, env, step) : std::string{};
  const std::string layout = state::to_string(state::layout_of(source.plan));
  bool warned = false;
  MorphdReport report(rank0_child >= 0 ? config.morphd_address : std::string{}, report_job_id(step, env), step.step_id);
  SupervisorOptions supervision;
  supervision.checkpoint_signal = config.checkpoint_signal;
  supervision.checkpoint_timeout_s = config.checkpoint_timeout_s;
  supervision.on_metrics = [&](std::size_t child, const std::string& line) {
    if (static_cast<int>(child) != rank0_child || (metrics_file.empty() && !report.enabled())) return;
    try {
      const auto m = launch::parse_metrics_line(line);
      if (!m) return;
      report.queue(*m, layout);
      if (metrics_file.empty()) return;
      append_text_line(metrics_file, launch::format_metrics_record(unix_now(), *m, layout), "the job's metrics file");
    } catch (const Error& e) {
      if (!warned) std::fprintf(stderr, "morphrun: MORPH_METRICS: %s (reported once)\n", e.what());
      warned = true;
    }
  };
  // Under morphrun --driver, its request to save (save_request.h), seen within a tick.
  const auto request = env.find("MORPH_SAVE_REQUEST");
  const std::string save_request = request != env.end() ? request->second : std::string{};
  if (report.enabled() || !save_request.empty()) {
    supervision.tick_s = 1;
    supervision.on_tick = [&] {
      if (report.enabled()) report.tick();
      return !save_request.empty() && save_requested(save_request);
    };
  }
  const SupervisorResult result = supervise(children, supervision);
  report.flush();
  // For morphrun --driver: a step whose tasks never ran (srun exits 0 when no task could launch).
  if (!metrics_file.empty() && env.count("MORPH_DRIVER")) try {
      append_text_line(metrics_file, fmt::format("# {:.3f} ranks exit={}", unix_now(), result.exit_code),
                       "the job's metrics file");
    } catch (const Error& e) {
      std::fprintf(stderr, "morphrun: %s; morphrun --driver will take this step for one whose tasks never ran\n",
                   e.what());
    }
  if (!result.message.empty()) std::fprintf(stderr, "morphrun: %s\n", result.message.c_str());
  if (result.outcome == Outcome::checkpointed && step.ranks.front() == 0)
    std::fprintf(stderr, "morphrun: checkpoint saved; exiting with %d %s\n", kExitRequeue,
                 env.count("MORPH_DRIVER") ? "to morphrun --driver" : "so that Slurm requeues the job");
  return result.exit_code;
}

}  // namespace morph::launcher
