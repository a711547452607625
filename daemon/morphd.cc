// morphd: Morph's policy daemon. Every round it reads the cluster from slurmctld, runs the
// scheduling policy and reconfigures Morph jobs through Slurm. See morphd(8).
//
//   morphd -D [--config FILE] [--policy morphling] [--once] [--dry-run]
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "config.h"
#include "daemon/job_histories.h"
#include "daemon/job_owners.h"
#include "daemon/job_tracker.h"
#include "daemon/journal.h"
#include "daemon/observations.h"
#include "daemon/online_params.h"
#include "daemon/report/report_server.h"
#include "daemon/reconfigurer.h"
#include "daemon/scheduler.h"
#include "daemon/slurm_client.h"
#include "daemon/sqlite_journal.h"
#include "daemon/store/state_store.h"
#include "daemon/store/writer_lock.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/launch/driver_contract.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/policy/policy.h"
#include "libmorph/util/error.h"
#include "tools/command_line/command_line.h"

namespace {

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_reload = 0;
extern "C" void on_stop(int) { g_stop = 1; }
extern "C" void on_reload(int) { g_reload = 1; }

struct Options {
  bool foreground = false;
  bool once = false;
  bool dry_run = false;
  std::string config_path;
  std::string state_path;  // "": morph.conf StateDatabase
  std::string policy = "morphling";
  double poll_s = 1;
};

bool g_syslog = false;

void log_line(const std::string& line) {
  if (g_syslog) {
    syslog(LOG_INFO, "%s", line.c_str());
    return;
  }
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%FT%T", std::localtime(&now));
  std::fprintf(stderr, "morphd: %s %s\n", stamp, line.c_str());
}

// Only root and SlurmUser may change jobs' plans: morphd refuses to run as anyone else.
void check_user() {
  const uid_t me = geteuid();
  if (me == 0) return;
  const std::optional<unsigned> slurm_user = morph::daemon::SlurmClient::slurm_user_id();
  if (slurm_user && *slurm_user == me) return;
  throw morph::Error(fmt::format("morphd runs as root or SlurmUser{}; this is uid {}",
                                 slurm_user ? fmt::format(" (uid {})", *slurm_user) : std::string{}, me));
}

// A job morphd moves or preempts saves its state and exits 75 (morphrun --driver), which
// Slurm requeues only when slurm.conf's RequeueExit lists it: else each move would end
// the job as failed. A dry run moves nothing and only says so.
void check_requeue_exit(bool dry_run) {
  // Without slurm.conf libslurm retries for a minute before it gives up: said at once.
  const char* env = std::getenv("SLURM_CONF");
  const std::string conf = env != nullptr && *env != '\0' ? env : MORPH_SLURM_CONF;
  std::error_code error;
  const bool found = std::filesystem::exists(conf, error);
  const std::optional<std::string> listed =
      found ? morph::daemon::SlurmClient::requeue_exit() : std::optional<std::string>{};
  std::string why;
  if (!found)
    why = fmt::format("{}: no slurm.conf (SLURM_CONF or the installed one): morphd finds slurmctld through it", conf);
  else if (!listed)
    why = fmt::format("slurmctld did not answer for slurm.conf's RequeueExit (is it up? the cluster of {})", conf);
  else if (!morph::launch::requeue_exit_lists(*listed))
    why = fmt::format("slurm.conf's RequeueExit={0} does not list {1}: a job morphd moves or preempts saves and "
                      "exits {1}, which Slurm would end as failed instead of requeuing it; add {1} to RequeueExit",
                      listed->empty() ? "(unset)" : *listed, morph::launch::kExitRequeue);
  if (why.empty()) return;
  if (!dry_run) throw morph::Error(why);
  log_line(why + " (dry run: going on)");
}

// Jobs morphd knows that Slurm reports ended (or forgot) get their end in the database.
void finish_jobs(morph::store::StateStore& state, const morph::daemon::ClusterSnapshot& snapshot) {
  std::map<std::uint32_t, bool> alive;
  for (const morph::daemon::SlurmJob& j : snapshot.jobs) alive[j.id] = j.phase != morph::daemon::JobPhase::done;
  for (const morph::store::JobId job : state.unfinished_jobs())
    if (!(alive.count(job) && alive.at(job))) state.finish_job(job, static_cast<std::int64_t>(snapshot.now_s));
}

// PurgeJobsAfterDays: what is recorded of jobs that ended `after_s` ago goes, a bounded
// number a round so that one round never holds the database long.
void purge_ended_jobs(morph::store::StateStore& state, double after_s, double now_s) {
  constexpr int kJobsPerRound = 1000;
  const int purged = state.purge_ended_jobs(static_cast<std::int64_t>(std::floor(now_s - after_s)), kJobsPerRound);
  if (purged > 0)
    log_line(fmt::format("purged what is recorded of {} job{} that ended over {:g} day{} ago (PurgeJobsAfterDays)",
                         purged, purged == 1 ? "" : "s", after_s / 86400, after_s == 86400 ? "" : "s"));
}

// What morphd reads from files: morph.conf, the model catalog and the fitted models.
struct Loaded {
  morph::MorphConfig config;
  morph::Catalog catalog;
  morph::PerfStore perf;

  static std::unique_ptr<Loaded> from(const std::string& conf_path) { return with(morph::load_morph_conf(conf_path)); }
  // `config`'s catalog and fitted models.
  static std::unique_ptr<Loaded> with(morph::MorphConfig config) {
    const std::string catalog_path =
        !config.model_catalog.empty() ? config.model_catalog : std::string(MORPH_PKGDATADIR) + "/models.json";
    morph::Catalog catalog = morph::Catalog::load_file(catalog_path);
    morph::PerfStore perf = morph::PerfStore::load_dir(config.perf_model_dir);
    return std::make_unique<Loaded>(Loaded{std::move(config), std::move(catalog), std::move(perf)});
  }
};

// The settings a running morphd cannot change: they take effect when it restarts
// (StateDatabase only where --state does not override it).
std::vector<std::string> need_restart(const morph::MorphConfig& before, const morph::MorphConfig& now,
                                      bool state_given) {
  std::vector<std::string> keys;
  if (now.state_database != before.state_database && !state_given) keys.push_back("StateDatabase");
  if (now.morphd_address != before.morphd_address) keys.push_back("MorphdAddress");
  return keys;
}

// What morphd checks before it becomes a daemon, so that a start that cannot succeed
// fails where it was started, with its message and status 1 (it exited 0 with the
// error in syslog), and what it keeps of those checks.
struct Startup {
  std::string conf_path;
  morph::MorphConfig first;  // what a reload cannot change
  std::string state_path;
  morph::store::WriterLock lock;
  std::unique_ptr<Loaded> loaded;  // SIGHUP loads them again
};

Startup start(const Options& o) {
  check_user();
  const std::string conf_path = morph::morph_conf_path(o.config_path);
  morph::MorphConfig first = morph::load_morph_conf(conf_path);
  const std::string state_path = !o.state_path.empty() ? o.state_path : first.state_database;
  // Before the other files: a second morphd is refused first of all. The lock's file
  // descriptor, and so the lock, passes to the daemon.
  morph::store::WriterLock lock = morph::store::WriterLock::acquire(
      state_path, "stop it, or give this morphd a database of its own (--state)");
  check_requeue_exit(o.dry_run);
  std::unique_ptr<Loaded> loaded = Loaded::with(first);
  // Created or migrated, and closed: an SQLite connection must not cross fork().
  { morph::store::StateStore::open(state_path); }
  return Startup{conf_path, std::move(first), state_path, std::move(lock), std::move(loaded)};
}

int run(const Options& o, Startup startup) {
  const std::string& conf_path = startup.conf_path;
  const morph::MorphConfig& first = startup.first;
  std::unique_ptr<Loaded>& loaded = startup.loaded;

  morph::daemon::SlurmClient slurm;
  morph::store::StateStore state = morph::store::StateStore::open(startup.state_path);
  morph::daemon::SqliteJournal journal(state);
  morph::daemon::JobTracker tracker(state);
  const char* crash_after = std::getenv("MORPHD_CRASH_AFTER");
  morph::daemon::ReconfigurerOptions steps;
  steps.checkpoint_signal = first.checkpoint_signal;
  steps.checkpoint_timeout_s = first.checkpoint_timeout_s;
  steps.stale_plan_s = morph::daemon::Reconfigurer::stale_plan_after(first.policy.scheduling_interval_s);
  steps.crash_after = crash_after ? crash_after : "";
  morph::daemon::Reconfigurer reconfigurer(slurm, journal, steps, log_line);
  morph::daemon::Scheduler scheduler({loaded->config, loaded->catalog, loaded->perf},
                                     morph::policy::make_policy(o.policy), reconfigurer, journal);
  for (const auto& [model, refit] : morph::daemon::load_online_refits(state, loaded->catalog)) {
    scheduler.use_refit(model, refit);
    log_line(fmt::format("model {}: the parameters of its latest online refit (state database)", model));
  }
  {
    std::vector<std::string> skipped;
    const auto points =
        morph::daemon::load_refit_points(state, {loaded->config, loaded->catalog, loaded->perf}, &skipped);
    for (const std::string& s : skipped) log_line(s);
    scheduler.restore(points);
    if (!points.empty())
      log_line(fmt::format("online refit: {} point{} its jobs measured before (state database)", points.size(),
                           points.size() == 1 ? "" : "s"));
  }
  if (const std::vector<morph::store::SizeCapRow> caps = state.size_caps(); !caps.empty()) {
    scheduler.size_caps().restore(caps);
    log_line(fmt::format("size caps of {} job{} Slurm refused before (state database)", caps.size(),
                         caps.size() == 1 ? "" : "s"));
  }
  std::vector<morph::store::SizeCapRow> caps_recorded = state.size_caps();
  log_line(fmt::format("started: policy {}, {}, state {}, round every {:.0f} s", o.policy, conf_path, state.path(),
                       first.policy.scheduling_interval_s));
  // What a predecessor left half done is finished (or rolled back) before anything new;
  // a dry run changes nothing, that included.
  if (const auto unfinished = journal.unfinished(); !unfinished.empty() && o.dry_run) {
    log_line(fmt::format("{} unfinished reconfiguration(s) left as they are (dry run)", unfinished.size()));
  } else if (!unfinished.empty()) {
    log_line(fmt::format("resuming {} unfinished reconfiguration(s)", unfinished.size()));
    reconfigurer.advance_all(static_cast<double>(std::time(nullptr)));
  }

  // morphrun's iteration reports (MorphdAddress=): only from the uid that owns the job.
  // A dry run does not listen: the reports wait in morphrun for a morphd that records them.
  std::unique_ptr<morph::report::ReportServer> reports;
  morph::daemon::JobOwners owners([&](std::uint32_t job, bool* gone) { return slurm.job(job, gone); });
  if (!first.morphd_address.empty() && !o.dry_run) {
    morph::report::ReportServerOptions options;
    options.log = log_line;
    reports = std::make_unique<morph::report::ReportServer>(
        first.morphd_address,
        [&](std::uint32_t job) -> std::optional<uid_t> {
          const morph::daemon::JobOwners::Answer a = owners.owner(job);
          using Kind = morph::daemon::JobOwners::Answer::Kind;
          if (a.kind == Kind::later) throw morph::report::ReportDeferred(a.why);
          return a.kind == Kind::owner ? std::optional<uid_t>(a.uid) : std::nullopt;
        },
        options);
    log_line(fmt::format("receiving iteration reports on {}", first.morphd_address));
  }
  using Clock = std::chrono::steady_clock;
  // The whole --poll, whatever arrives: poll_once() returns at the first connection or
  // byte, and each return cost slurmctld a snapshot (four RPCs) and renewed the owner
  // lookups' budget, so a thousand jobs flushing every few seconds, or one peer sending a
  // byte at a time, made hundreds of RPCs a second.
  auto serve_reports = [&](double seconds) {
    if (!reports) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      return;
    }
    const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(seconds));
    for (Clock::time_point now = Clock::now(); now < until && !g_stop && !g_reload; now = Clock::now()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now);
      reports->poll_once(static_cast<int>(left.count()), [&](uid_t, const morph::report::ReportMessage& m) {
        if (!state.job(m.job_id))
          throw morph::report::ReportDeferred("not recorded yet (morphd records a Morph job at its next round)");
        state.record_observations(morph::daemon::observations_of(m, static_cast<double>(std::time(nullptr))));
      });
    }
  };

  Clock::time_point last_round{};
  morph::daemon::BatchHistories batches;  // adaptive jobs' batch changes, read incrementally
  morph::daemon::RefitRecorder refits;     // what rounds learned, until the database has it
  // SIGHUP: morph.conf, the catalog and the fitted models again, for the next rounds; a
  // file that fails to load leaves what runs as it is.
  auto reload = [&] {
    std::unique_ptr<Loaded> next;
    try {
      next = Loaded::from(conf_path);
    } catch (const std::exception& e) {
      log_line(fmt::format("SIGHUP: not reloaded, running on as before: {}", e.what()));
      return;
    }
    for (const std::string& key : need_restart(first, next->config, !o.state_path.empty()))
      log_line(fmt::format("SIGHUP: {} changed in {}; it takes effect when morphd restarts", key, conf_path));
    scheduler.reload({next->config, next->catalog, next->perf});
    reconfigurer.set_checkpoint(next->config.checkpoint_signal, next->config.checkpoint_timeout_s);
    reconfigurer.set_stale_plan(morph::daemon::Reconfigurer::stale_plan_after(next->config.policy.scheduling_interval_s));
    loaded = std::move(next);
    last_round = {};  // a round at once, under the new settings
    log_line(fmt::format("SIGHUP: reloaded {}: {} node{}, {} fitted model{}, round every {:.0f} s", conf_path,
                         loaded->config.cluster.nodes().size(), loaded->config.cluster.nodes().size() == 1 ? "" : "s",
                         loaded->perf.size(), loaded->perf.size() == 1 ? "" : "s",
                         loaded->config.policy.scheduling_interval_s));
  };
  while (!g_stop) {
    // Whatever else fails (the journal unreadable a moment) ends no more than this pass.
    try {
      if (g_reload) {
        g_reload = 0;
        reload();
      }
      bool changed = false;
      std::string error;
      const auto snapshot = slurm.snapshot(&changed, &error);
      const bool due =
          Clock::now() - last_round >= std::chrono::duration<double>(loaded->config.policy.scheduling_interval_s);
      if (snapshot) owners.reset(snapshot->jobs);
      if (!snapshot) {
        if (o.once) {  // one round, and there was none
          log_line("slurmctld did not answer: " + error);
          return 1;
        }
        log_line("slurmctld did not answer: " + error + "; trying again");
      } else if (changed || due || !reconfigurer.busy().empty()) {
        last_round = Clock::now();
        // What fails (the policy, the state database full or busy) is logged and tried again
        // the next round: the jobs in flight, the other bookkeeping and the reports go on.
        bool failed = false;
        auto attempt = [&](std::string_view what, const std::function<void()>& work) {
          try {
            work();
          } catch (const std::exception& e) {
            log_line(fmt::format("{} failed: {}; going on", what, e.what()));
            failed = true;
          }
        };
        if (!o.dry_run) attempt("tracking the jobs", [&] { tracker.track(*snapshot); });
        morph::daemon::RoundReport r;
        attempt("round", [&] {
          r = scheduler.round(*snapshot, o.dry_run, morph::daemon::read_histories(state, *snapshot, &batches));
        });
        for (const std::string& line : r.lines) log_line(line);
        if (!o.dry_run) {
          refits.add(r.learned, r.refits, snapshot->now_s);
          attempt("recording the refits (kept for the next round)",
                  [&] { refits.store(state, loaded->config.policy.refit_point_max_age_s); });
          attempt("recording the finished jobs", [&] { finish_jobs(state, *snapshot); });
          if (const double after_s = loaded->config.purge_jobs_after_s; after_s > 0)
            attempt("purging the jobs that ended long ago", [&] { purge_ended_jobs(state, after_s, snapshot->now_s); });
          attempt("recording the size caps", [&] {
            if (std::vector<morph::store::SizeCapRow> caps = scheduler.size_caps().rows(); caps != caps_recorded) {
              state.replace_size_caps(caps);
              caps_recorded = std::move(caps);
            }
          });
        }
        if (o.once) {
          log_line(fmt::format("round: {} Morph jobs, {} reconfigurations {}", r.jobs, r.started,
                               o.dry_run ? "decided (dry run)" : "started"));
          return failed ? 1 : 0;
        }
      }
    } catch (const std::exception& e) {
      log_line(fmt::format("{}; trying again", e.what()));
      if (o.once) return 1;
    }
    serve_reports(o.poll_s);
  }
  log_line("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  morph::command_line::Program app("morphd", "morphd: Morph's policy daemon: reconfigures Morph jobs through Slurm");
  app.version(PACKAGE_STRING);
  app.flag("-D,--foreground", o.foreground, "stay in the foreground and log to standard error (systemd)");
  app.config(o.config_path);
  app.option("--state", o.state_path, "the state database (default: morph.conf StateDatabase)");
  app.option("--policy", o.policy, "the scheduling policy (default morphling)");
  app.flag("--once", o.once, "run one round and exit");
  app.flag("--dry-run", o.dry_run, "decide and log, change nothing");
  app.option("--poll", o.poll_s, "seconds between cheap reads of slurmctld (default 1)").range(0.05, 60.0);
  // A command line it cannot take is a start that cannot succeed: 1 (--help: 0).
  if (const std::optional<int> status = app.parse(argc, argv)) return *status == 0 ? 0 : 1;
  struct sigaction stop{};
  stop.sa_handler = on_stop;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  struct sigaction reload{};
  reload.sa_handler = on_reload;
  reload.sa_flags = SA_RESTART;  // Slurm's RPCs in progress go on
  sigaction(SIGHUP, &reload, nullptr);
  try {
    morph::policy::make_policy(o.policy);  // an unknown name is refused before anything starts
    Startup startup = start(o);
    if (!o.foreground && !o.once) {
      if (daemon(0, 0) != 0) throw morph::Error("cannot become a daemon");
      openlog("morphd", LOG_PID, LOG_DAEMON);
      g_syslog = true;
      startup.lock.write_pid();
    }
    return run(o, std::move(startup));
  } catch (const std::exception& e) {
    log_line(e.what());
    return 1;
  }
}
