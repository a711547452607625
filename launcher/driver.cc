#include "launcher/driver.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "launcher/morph_config.h"
#include "launcher/save_request.h"
#include "launcher/slurm_job.h"
#include "launcher/supervisor.h"
#include "libmorph/launch/checkpoint_choice.h"
#include "libmorph/launch/plan_source.h"
#include "libmorph/record/job_record.h"
#include "libmorph/state/layout.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph::launcher {
namespace {

namespace fs = std::filesystem;

// A step that fails before its first iteration is launched again, under the next step
// number, up to kStartRetries times in a row, after 2, 4 and 8 s. Slurm 22.05 with Debian's
// PMIx can leave a slurmstepd hung in PMIx_server_finalize when the job shrinks or is
// requeued while the step tears down; it keeps its socket (stepd.slurm.pmix.<job>.<step> in
// the node's spool), and the requeued job's step of that number fails to launch there
// ("task N launch failed: Unspecified error"); each earlier step left hung blocks one
// number. Open MPI 4.1 over TCP also kills a rank in MPI_Init now and then
// (docs/launcher.md, Known limits); a fresh-clone CI run saw that twice in a row.
constexpr int kStartRetries = 3;
constexpr const char* kFailedStartNote =
    "morphrun: the {}: launching it again, retry {} of {} (a hung slurmstepd "
    "of an earlier run of this job can hold the step number's PMIx socket on a node, which the node's slurmd log "
    "says; or a rank died in MPI_Init)\n";

void pause_before_retry(int retry) { std::this_thread::sleep_for(std::chrono::seconds(1 << retry)); }

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// slurmctld did not answer within read_job's retries: the job is requeued, not failed.
class SlurmctldUnreachable : public Error {
 public:
  using Error::Error;
};

// One job's run as the driver sees it: the record it started the step under.
struct Current {
  std::string admin_comment;
  JobRecord record;
  bool has_record = false;
};

class Driver {
 public:
  explicit Driver(const Options& o) : o_(o), config_(load_launcher_config(o.config_path)) {
    const char* id = std::getenv("SLURM_JOB_ID");
    if (id == nullptr) throw Error("--driver runs in a Slurm batch script (SLURM_JOB_ID is not set)");
    job_id_ = static_cast<std::uint32_t>(parse_int(id, "SLURM_JOB_ID", 1, 0x7fffffff));
    self_ = fs::read_symlink("/proc/self/exe").string();
    reshard_ = (fs::path(self_).parent_path() / "morph-reshard-mpi").string();
    const char* submit = std::getenv("SLURM_SUBMIT_DIR");
    metrics_ = !o.metrics_file.empty() ? fs::absolute(o.metrics_file).string()
                                       : fmt::format("{}/morph-{}.metrics", submit ? submit : ".", job_id_);
    if (!o.checkpoint_dir.empty()) save_request_dir_ = fs::absolute(o.checkpoint_dir).string();
    // The driver tells a step that ran from one that did not by the lines its tasks append
    // there: a file it cannot read back would make every finished step a failed start.
    std::error_code ec;
    if (fs::exists(metrics_, ec) && !fs::is_regular_file(metrics_, ec))
      throw Error(fmt::format("--metrics {}: not a regular file; the driver reads its steps' ends from it", metrics_));
    if (!std::ofstream(metrics_, std::ios::app))
      throw Error(fmt::format("--metrics {}: cannot be written ({}); the driver reads its steps' ends from it",
                              metrics_, std::strerror(errno)));
  }

  int run() {
    block_supervised_signals(config_.checkpoint_signal);
    const char* restarts = std::getenv("SLURM_RESTART_COUNT");
    event(fmt::format("driver restarts={}", restarts != nullptr ? restarts : "0"));
    // Those an earlier run left: no step asks for them (each names its own), but none
    // would be removed otherwise.
    if (!save_request_dir_.empty()) clear_save_requests(save_request_dir_, job_id_);
    try {
      return steps();
    } catch (const SlurmctldUnreachable& e) {  // an outage delays the job; it does not fail it
      event("requeue reason=slurmctld-unreachable");
      std::fprintf(stderr, "morphrun: %s; exiting with %d so that Slurm requeues the job\n", e.what(), kExitRequeue);
      return kExitRequeue;
    }
  }

 private:
  struct Step {
    SupervisorResult result;
    bool replan = false;
    bool signalled = false;  // the checkpoint signal came: after the save the job exits, replanned or not
  };

  // Starts the step under the job's record, again after each new plan, until it ends.
  int steps() {
    for (;;) {
      Current now = read_job();
      const Placement& p = now.record.current;
      if (now.has_record && p.nodes > static_cast<int>(nodes_.size())) {
        event(fmt::format("requeue reason=grow nodes={}->{}", nodes_.size(), p.nodes));
        std::fprintf(stderr, "morphrun: the plan needs %d nodes, the job holds %zu: only a requeue can grow it; "
                     "exiting with %d\n", p.nodes, nodes_.size(), kExitRequeue);
        return kExitRequeue;
      }
      if (now.has_record && p.nodes < static_cast<int>(nodes_.size())) {
        try {
          shrink(p.nodes);
        } catch (const SlurmctldUnreachable&) {
          throw;
        } catch (const Error& e) {  // the checkpoint is whole: a requeue starts the plan on its nodes
          event("requeue reason=shrink-refused");
          std::fprintf(stderr, "morphrun: %s; exiting with %d so that Slurm requeues the job\n", e.what(),
                       kExitRequeue);
          return kExitRequeue;
        }
      }
      const state::Layout layout{now.record.current.plan.dp, now.record.current.plan.tp, now.record.current.plan.pp,
                                 now.record.current.plan.zero_stage};
      std::string resume;  // the checkpoint every task of the step resumes from; "": a fresh start
      if (!o_.checkpoint_dir.empty()) {
        if (const int rc = reshard_if_needed(now, layout, &resume); rc != 0) return rc;
        if (checkpoint_asked_) {  // during the reshard: the checkpoint on disk is whole
          event("requeue reason=checkpoint-signal");
          return kExitRequeue;
        }
      }
      const std::uintmax_t mark = metrics_size();
      event(fmt::format("start layout={} nodes={}", state::to_string(layout), nodes_.size()));
      Step step = train(now, resume);
      const StepTrace trace = trace_since(mark);
      if (trace.iterated) failed_starts_ = 0;
      if (step.result.outcome == Outcome::finished && !trace.ranks_ended) {
        step.result = {Outcome::failed, 1, "srun exited 0, but the tasks did not run (no rank 0 ended the step)"};
      }
      const bool ended = step.result.outcome == Outcome::failed || step.result.outcome == Outcome::terminated;
      if (ended && !step.result.message.empty()) std::fprintf(stderr, "morphrun: %s\n", step.result.message.c_str());
      switch (step.result.outcome) {
        case Outcome::finished:
          event("finished");
          return 0;
        case Outcome::failed:
          // 75 is the tasks' own checkpoint exit (the signal reached the step's processes
          // from Slurm, --signal=USR2@T, not from the driver), or a trainer's: a requeue
          // asked for, never a failed start, even before the first iteration.
          if (step.result.exit_code == kExitRequeue) {
            event("requeue reason=step-exit");
            std::fprintf(stderr, "morphrun: the step exited with %d; exiting with it so that Slurm requeues the job\n",
                         kExitRequeue);
            return kExitRequeue;
          }
          if (failed_starts_ < kStartRetries && !trace.iterated) {
            ++failed_starts_;
            event(fmt::format("restart reason=failed-start exit={}", step.result.exit_code));
            std::fputs(fmt::format(kFailedStartNote, "step failed before its first iteration", failed_starts_,
                                   kStartRetries).c_str(),
                       stderr);
            pause_before_retry(failed_starts_);
            continue;
          }
          return step.result.exit_code;
        case Outcome::terminated:
          return step.result.exit_code;
        case Outcome::checkpointed:
        case Outcome::timed_out:
          event("checkpointed");
          if (step.signalled || (!step.replan && !replanned(now))) {
            event("requeue reason=checkpoint-signal");
            std::fprintf(stderr, "morphrun: checkpoint saved; exiting with %d so that Slurm requeues the job\n",
                         kExitRequeue);
            return kExitRequeue;
          }
          break;  // a new plan: restart in place
      }
    }
  }

  Current read_job() {
    std::string error;
    for (int attempt = 0; attempt < 6; ++attempt) {
      error.clear();
      if (std::optional<SlurmJob> job = load_slurm_job(job_id_, &error)) {
        nodes_ = job->nodes;
        Current c;
        c.admin_comment = job->admin_comment;
        if (is_job_record(c.admin_comment)) {
          c.record = parse_admin_comment(c.admin_comment);
          c.has_record = true;
        } else {
          const launch::PlanSource source = launch::resolve_plan({}, o_.plan);  // "missing plan" without --plan
          c.record.current.plan = source.plan;
          c.record.current.nodes = static_cast<int>(nodes_.size());
          c.record.current.gpus_per_node = source.plan.gpus() / std::max<int>(1, static_cast<int>(nodes_.size()));
        }
        return c;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1 << attempt));
    }
    throw SlurmctldUnreachable(fmt::format("job {}: slurmctld did not answer: {}", job_id_, error));
  }

  // The record changed since `started` (root or SlurmUser rewrote the plan).
  bool replanned(const Current& started) {
    std::string error;
    const std::optional<SlurmJob> job = load_slurm_job(job_id_, &error);
    return job && job->admin_comment != started.admin_comment && is_job_record(job->admin_comment);
  }

  void shrink(int nodes) {
    event(fmt::format("shrink nodes={}->{}", nodes_.size(), nodes));
    shrink_slurm_job(job_id_, nodes);
    read_job();
    // What slurm_job_<id>_resize.sh would set: the next srun sees the smaller allocation.
    const std::string list = fmt::format("{}", fmt::join(nodes_, ","));
    for (const char* name : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) setenv(name, list.c_str(), 1);
    for (const char* name : {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}) setenv(name, std::to_string(nodes_.size()).c_str(), 1);
    for (const char* name : {"SLURM_TASKS_PER_NODE", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_JOB_CPUS_PER_NODE"})
      unsetenv(name);
  }

  // morphd signals only jobs with a step of this name: their batch step is this driver,
  // which catches the checkpoint signal (driver_contract.h).
  static std::string step_name() { return fmt::format("--job-name={}", launch::kDriverStepName); }

  // srun and the options every step of the driver takes: its name, and under a job's
  // --export=NONE (or a list) the variables the driver passes its tasks.
  static std::vector<std::string> srun_start() {
    std::vector<std::string> argv{"srun", "--kill-on-bad-exit=1", step_name()};
    const char* job_export = std::getenv("SLURM_EXPORT_ENV");
    if (const std::string e = launch::step_export(job_export != nullptr ? job_export : ""); !e.empty())
      argv.push_back("--export=" + e);
    return argv;
  }

  std::vector<std::string> srun(const Current& c) const {
    const Placement& p = c.record.current;
    std::vector<std::string> argv = srun_start();
    for (const std::string& a : {std::string("-N"), std::to_string(p.nodes), std::string("-n"),
                                 std::to_string(p.nodes * p.gpus_per_node),
                                 fmt::format("--ntasks-per-node={}", p.gpus_per_node)})
      argv.push_back(a);
    if (o_.srun_mpi != "none") argv.push_back("--mpi=" + o_.srun_mpi);
    if (p.cpus_per_gpu > 0) argv.push_back(fmt::format("--cpus-per-task={}", p.cpus_per_gpu));
    return argv;
  }

  // The step's tasks get the record the driver read (spank_morph prefers it to the batch
  // script's older copy) and know that this job's driver restarts them (own_driver_variables()).
  std::vector<std::pair<std::string, std::string>> record_env(const Current& c) const {
    std::vector<std::pair<std::string, std::string>> env{{"MORPH_DRIVER", std::to_string(job_id_)}};
    // srun gives the step's tasks its name (step_name()) as SLURM_JOB_NAME: morphrun's
    // task mode gives the trainer the job's back.
    if (const char* name = std::getenv("SLURM_JOB_NAME"); name != nullptr) env.emplace_back("MORPH_JOB_NAME", name);
    if (c.has_record) {
      env.emplace_back("MORPH_RECORD", c.admin_comment);
      env.emplace_back("MORPH_RECORD_JOB", std::to_string(job_id_));
    }
    return env;
  }

  // Sets `resume` to the checkpoint in `layout` that the step starts from ("": none).
  int reshard_if_needed(const Current& c, const state::Layout& layout, std::string* resume) {
    const std::optional<launch::CheckpointChoice> choice =
        launch::choose_checkpoint(o_.checkpoint_dir, layout, c.record.request.model);
    *resume = choice ? choice->resume : std::string{};
    if (!choice || !choice->needs_reshard) return 0;
    event(fmt::format("reshard from={} to={}", state::to_string(choice->index.layout), state::to_string(layout)));
    ChildSpec step;
    step.argv = srun(c);
    // Without an MPI plugin every task would be a world of its own writing the same
    // copy: one task does it all.
    if (o_.srun_mpi == "none") {
      step.argv = srun_start();
      for (const char* a : {"-N", "1", "-n", "1"}) step.argv.emplace_back(a);
    }
    for (const std::string& a : {reshard_, std::string("--from"), choice->newest, std::string("--to"), choice->resume,
                                 std::string("--layout"), state::to_string(layout)})
      step.argv.push_back(a);
    if (o_.threads > 0) {  // 0: morph-reshard-mpi's own default, one thread per process
      step.argv.emplace_back("--threads");
      step.argv.push_back(std::to_string(o_.threads));
    }
    step.env = record_env(c);
    SupervisorOptions s;
    s.checkpoint_signal = config_.checkpoint_signal;
    s.forward_checkpoint_signal = false;  // a reshard is not interrupted; the driver exits 75 after it
    s.on_checkpoint_signal = [&] {
      event("checkpoint reason=signal (during the reshard)");
      checkpoint_asked_ = true;
    };
    // A run that failed after its commit (the target exists in the layout) is done.
    auto committed = [&] {
      const std::optional<launch::CheckpointChoice> again =
          launch::choose_checkpoint(o_.checkpoint_dir, layout, c.record.request.model);
      return again && !again->needs_reshard;
    };
    SupervisorResult r = supervise({step}, s);
    // The target is staged: each run starts clean.
    for (int retry = 1;
         retry <= kStartRetries && r.exit_code != 0 && r.outcome != Outcome::terminated && !checkpoint_asked_ &&
         !committed();
         ++retry) {
      event(fmt::format("restart reason=failed-reshard exit={}", r.exit_code));
      std::fputs(fmt::format(kFailedStartNote, "reshard step failed", retry, kStartRetries).c_str(), stderr);
      pause_before_retry(retry);
      r = supervise({step}, s);
    }
    if (r.exit_code == 0) return 0;
    if (r.outcome != Outcome::terminated && committed()) {
      event(fmt::format("reshard committed exit={}", r.exit_code));
      return 0;
    }
    std::fprintf(stderr, "morphrun: the reshard step %s (exit %d); %s is unchanged\n",
                 r.outcome == Outcome::terminated ? "was stopped" : "failed", r.exit_code, choice->newest.c_str());
    if (r.outcome == Outcome::terminated) return r.exit_code;  // SIGTERM, SIGINT or SIGHUP: the job ends as asked
    if (checkpoint_asked_) {  // the old checkpoint is whole: requeue, as after a save
      event("requeue reason=checkpoint-signal");
      return kExitRequeue;
    }
    return 1;
  }

  Step train(const Current& c, const std::string& resume) {
    ChildSpec step;
    step.argv = srun(c);
    step.argv.push_back(self_);
    auto add = [&](const char* flag, const std::string& value) {
      if (!value.empty()) {
        step.argv.emplace_back(flag);
        step.argv.push_back(value);
      }
    };
    add("--framework", o_.framework);
    add("--frameworks-dir", o_.frameworks_dir);
    add("--checkpoint", o_.checkpoint_dir);
    add("--metrics", metrics_);
    add("--config", o_.config_path);
    if (!c.has_record) add("--plan", o_.plan);
    if (!c.has_record && o_.seq > 0) add("--seq", std::to_string(o_.seq));
    if (o_.mpi_trainer) step.argv.emplace_back("--mpi-trainer");
    step.argv.emplace_back("--");
    step.argv.insert(step.argv.end(), o_.command.begin(), o_.command.end());
    step.env = record_env(c);
    // The driver's choice for all of them: each choosing on its own could see another
    // listing of the folder (NFS caches them per node).
    if (!o_.checkpoint_dir.empty()) step.env.emplace_back(launch::kCheckpointChoiceVariable, resume);
    // Its tasks' trainers are asked to save through the request file, not the signal
    // (save_request.h). The file names this step, so that one left by an earlier step or
    // run of the job, or still in a node's NFS cache, is no request to it.
    const std::string save_request =
        save_request_dir_.empty() ? std::string{} : save_request_path(save_request_dir_, job_id_, new_step_token());
    if (!save_request.empty()) step.env.emplace_back("MORPH_SAVE_REQUEST", save_request);

    Step out;
    SupervisorOptions s;
    s.request_checkpoint = [&] {
      if (save_request.empty()) return false;
      std::string error;
      if (request_save(save_request, &error)) return true;
      event(fmt::format("checkpoint by signal: {}", error));  // then every process of the step gets it
      return false;
    };
    s.checkpoint_signal = config_.checkpoint_signal;
    s.zero_is_finished = true;  // a task whose trainer saved exits 75: srun's 0 is a finished run
    // The tasks time their trainers out first; the driver waits a little longer for them.
    s.checkpoint_timeout_s = config_.checkpoint_timeout_s + 30;
    s.tick_s = config_.driver_poll_s;
    s.on_checkpoint_signal = [&] {
      event("checkpoint reason=signal");
      out.signalled = true;
    };
    s.on_tick = [&] {
      if (out.replan || !c.has_record) return false;
      std::string error;
      const std::optional<SlurmJob> job = load_slurm_job(job_id_, &error);
      if (!job || job->admin_comment == c.admin_comment || !is_job_record(job->admin_comment)) return false;
      try {
        const JobRecord next = parse_admin_comment(job->admin_comment);
        event(fmt::format("checkpoint reason=replan from=[{}] to=[{}]", to_string(c.record.current.plan),
                          to_string(next.current.plan)));
      } catch (const Error& e) {
        return false;  // a record being rewritten badly: job_submit_morph refuses those; wait for a good one
      }
      out.replan = true;
      return true;
    };
    out.result = supervise({step}, s);
    if (!save_request.empty()) clear_save_request(save_request);
    return out;
  }

  std::uintmax_t metrics_size() const {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(metrics_, ec);
    return ec ? 0 : size;
  }

  // What a step's tasks appended to the metrics file after byte `from`: an iteration line,
  // rank 0's morphrun's "# TIME ranks exit=N".
  struct StepTrace {
    bool iterated = false;
    bool ranks_ended = false;
  };
  StepTrace trace_since(std::uintmax_t from) const {
    StepTrace t;
    std::ifstream in(metrics_);
    in.seekg(static_cast<std::streamoff>(from));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] != '#') t.iterated = true;
      if (line.starts_with("# ") && line.find(" ranks exit=") != std::string::npos) t.ranks_ended = true;
    }
    return t;
  }

  // "# TIME EVENT" in the job's metrics file and on stderr.
  void event(const std::string& what) const {
    const std::string line = fmt::format("# {:.3f} {}", unix_now(), what);
    std::fprintf(stderr, "morphrun: %s\n", what.c_str());
    try {
      append_text_line(metrics_, line, "the job's metrics file");
    } catch (const Error& e) {
      std::fprintf(stderr, "morphrun: %s\n", e.what());
    }
  }

  const Options& o_;
  MorphConfig config_;
  std::uint32_t job_id_ = 0;
  std::string self_, reshard_, metrics_;
  std::string save_request_dir_;  // the checkpoint folder, where requests are; "" without one: the signal asks
  std::vector<std::string> nodes_;
  bool checkpoint_asked_ = false;  // the checkpoint signal came between two steps
  int failed_starts_ = 0;          // steps in a row that failed before their first iteration
};

}  // namespace

int run_driver(const Options& options) { return Driver(options).run(); }

}  // namespace morph::launcher
