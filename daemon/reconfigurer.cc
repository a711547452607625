#include "daemon/reconfigurer.h"

#include <csignal>

#include <fmt/format.h>

namespace morph::daemon {
namespace {

constexpr double kSignalAfterStartS = 5;
// The longest wait for a requeued job's BeginTime before releasing it anyway: above
// Slurm's default cred_expire (120 s); a user's own --begin far ahead is not waited for.
constexpr double kLongestEligibleWaitS = 900;
// How long a call whose failure may be slurmctld timing out (a held job's record update,
// a hold, a forced requeue) is tried again before the entry gives up: a held job is
// released on its old plan, a running one keeps it.
constexpr double kRetryS = 180;

bool pending(const SlurmJob& j) { return j.phase == JobPhase::pending; }
bool running(const SlurmJob& j) { return j.phase == JobPhase::running || j.phase == JobPhase::finishing; }

// Held, and not by its user: morphd's hold (or a requeue by force), or an administrator's.
// Slurm keeps one hold: a user's `scontrol hold` of a job an administrator holds succeeds
// and changes nothing, so morphd cannot keep that one (docs/morphd.md).
bool held_by_morphd(const SlurmJob& job) { return job.held && !job.held_by_user; }

}  // namespace

Reconfigurer::Reconfigurer(SlurmOps& slurm, Journal& journal, ReconfigurerOptions options, Log log)
    : slurm_(slurm), journal_(journal), options_(options), log_(std::move(log)) {}

void Reconfigurer::move(JournalEntry& e, Step next, double now_s, const std::string& why) {
  journal_.advance(e.id, next, now_s);
  if (log_)
    log_(fmt::format("job {}: {} {} -> {}{}", e.change.job, store::to_string(e.change.path), store::to_string(e.step),
                     store::to_string(next),
                     why.empty() ? "" : ": " + why));
  e.step = next;
  e.updated_s = now_s;
  if (!options_.crash_after.empty() && options_.crash_after == store::to_string(next)) raise(SIGKILL);
}

void Reconfigurer::start(const Reconfiguration& change, double now_s) {
  const std::int64_t id = journal_.begin(change, now_s);
  JournalEntry e{id, change, Step::planned, now_s, now_s};
  if (log_) log_(fmt::format("job {}: {}", change.job, change.reason));
  while (step(e, now_s)) {
  }
}

void Reconfigurer::advance_all(double now_s) {
  for (JournalEntry e : journal_.unfinished())
    while (step(e, now_s)) {
    }
}

std::set<std::uint32_t> Reconfigurer::busy() const {
  std::set<std::uint32_t> jobs;
  for (const JournalEntry& e : journal_.unfinished()) jobs.insert(e.change.job);
  return jobs;
}

bool Reconfigurer::step(JournalEntry& e, double now_s) {
  if (e.step == Step::done || e.step == Step::rolled_back) return false;
  bool gone = false;
  const std::optional<SlurmJob> job = slurm_.job(e.change.job, &gone);
  if (!job) {
    if (gone) move(e, Step::rolled_back, now_s, "the job is gone");
    return false;  // slurmctld did not answer: next round
  }
  if (job->phase == JobPhase::done) {
    if (e.step == Step::held || e.step == Step::updated) slurm_.release(e.change.job);
    move(e, Step::rolled_back, now_s, "the job ended");
    return false;
  }
  const Reconfiguration& c = e.change;
  const bool as_planned = job->admin_comment == c.from_record;
  const bool as_wanted = job->admin_comment == c.to_record;
  // A job this entry held is released before the entry ends; while the release fails
  // (slurmctld timing out) the entry stays, or the job would wait held for ever.
  auto refuse = [&](const std::string& why) {
    if (held_by_morphd(*job) && (e.step == Step::requeued || e.step == Step::held || e.step == Step::updated))
      if (const std::string error = slurm_.release(c.job); !error.empty()) {
        if (log_) log_(fmt::format("job {}: {}; cannot release it: {}; the next round tries again", c.job, why, error));
        return false;
      }
    move(e, Step::rolled_back, now_s, why);
    return false;
  };
  // A call slurmctld may have made though its answer was lost is tried again the next
  // rounds, each reading the job first. Past kRetryS since it became due (`since`) the
  // entry gives up before calling again, on the job as the last try left it: a hold that
  // try placed is seen, and released.
  auto out_of_time = [&](double since) { return now_s - since >= kRetryS; };
  auto give_up = [&](const std::string& what, double since) {
    return refuse(fmt::format("{} failed for {:.0f} s", what, now_s - since));
  };
  auto failed = [&](const std::string& what, const std::string& error) {
    if (log_) log_(fmt::format("job {}: {} failed: {}; the next round tries again", c.job, what, error));
    return false;
  };

  // A plan that could not begin within a few rounds (slurmctld did not answer, morphd was
  // down) is not carried out later on a changed cluster, unless Slurm shows it begun (the
  // record written, the job requeued) before morphd could journal it.
  // A preempt, or a move on the same shape, keeps its record: only a pending job shows it.
  const bool begun =
      (as_wanted && c.to_record != c.from_record) || (pending(*job) && c.path != Path::start);
  if (e.step == Step::planned && !begun && now_s - e.updated_s > options_.stale_plan_s)
    return refuse(fmt::format("planned {:.0f} s ago and not begun; the next round decides afresh", now_s - e.updated_s));

  if (c.path == Path::start || c.path == Path::inplace || c.path == Path::shrink) {
    if (e.step == Step::planned) {
      if (as_wanted) {
        move(e, Step::updated, now_s);
        return true;
      }
      if (!as_planned) return refuse("its record changed meanwhile");
      if (c.path == Path::start && !pending(*job)) return refuse("it is no longer pending");
      if (c.path != Path::start && !running(*job)) return refuse("it is no longer running");
      if (c.path != Path::start && out_of_time(e.updated_s))
        return give_up("the record update", e.updated_s);
      if (const std::string error = slurm_.set_record(c.job, c.to_record, c.path == Path::start); !error.empty()) {
        // slurmctld may have made the update and lost its answer: a record-only one (in
        // place, shrink) is read back and tried again the next rounds, so that the driver's
        // restart is counted; a pending job's, which slurmctld may refuse for good, ends here.
        if (c.path == Path::start) return refuse(error);
        return failed("the record update", error);
      }
      move(e, Step::updated, now_s);
      return true;
    }
    move(e, Step::done, now_s);
    return false;
  }

  // requeue and preempt
  switch (e.step) {
    case Step::planned:
      if (!as_planned) return refuse("its record changed meanwhile");
      if (pending(*job)) {
        move(e, Step::requeued, now_s, "already pending");
        return true;
      }
      // A batch script that has only just started may not catch the signal yet (its
      // default action ends the job): give morphrun --driver a moment to be there.
      if (now_s - job->start_time_s < kSignalAfterStartS) return false;
      if (const std::string error = slurm_.signal_batch(c.job, options_.checkpoint_signal); !error.empty())
        return refuse(error);
      move(e, Step::signalled, now_s);
      return false;  // the job needs time to save
    case Step::signalled:
      if (pending(*job)) {
        move(e, Step::requeued, now_s);
        return true;
      }
      // Requeued and started again before anyone could hold it (morphd was down): it
      // runs its old plan, the signal is spent; the next round decides afresh.
      if (job->start_time_s > e.updated_s) return refuse("it started again on its old plan");
      if (const double due = e.updated_s + options_.checkpoint_timeout_s + options_.requeue_grace_s; now_s > due) {
        // The job did not save and exit in time: end it; its previous checkpoint stands.
        // The requeue may have taken effect though its answer was lost: the next round sees.
        if (out_of_time(due)) return give_up("requeue_hold", due);
        if (const std::string error = slurm_.requeue_hold(c.job); !error.empty()) return failed("requeue_hold", error);
        if (log_) log_(fmt::format("job {}: no exit {:.0f} s after the checkpoint signal: requeued by force", c.job,
                                   now_s - e.updated_s));
      }
      return false;
    case Step::requeued:
      if (c.path == Path::preempt) {
        // Back in the queue, not held: a requeue by force (above) held it.
        if (held_by_morphd(*job))
          if (const std::string error = slurm_.release(c.job); !error.empty()) return false;  // next round
        move(e, Step::done, now_s);
        return false;
      }
      if (!pending(*job)) return refuse("it started again before it could be held");
      // A hold whose answer was lost may have held it: the next round reads it again (a
      // job that started meanwhile was not held, and rolls back above). A job its user
      // holds is not held again: morphd's hold would replace the user's, and its release
      // then end both.
      if (!job->held) {
        if (out_of_time(e.updated_s)) return give_up("hold", e.updated_s);
        if (const std::string error = slurm_.hold(c.job); !error.empty()) return failed("hold", error);
      }
      move(e, Step::held, now_s);
      return true;
    case Step::held:
      // Its user released it meanwhile and it started on its old record: a pending job's
      // update (its nodes too) would go to a running one.
      if (!pending(*job)) return refuse("it started again before its record was written");
      if (!as_wanted) {
        if (!as_planned) return refuse("its record changed meanwhile");
        if (out_of_time(e.updated_s)) return give_up("the record update", e.updated_s);
        if (const std::string error = slurm_.set_record(c.job, c.to_record, true); !error.empty())
          return failed("the record update", error);
      }
      move(e, Step::updated, now_s);
      return true;
    case Step::updated:
      // A requeued job may not start before its BeginTime (requeue + cred_expire + 1 s),
      // and once that passes no event makes slurmctld schedule it: it would wait for the
      // next periodic pass (up to bf_interval). Released only then, it is scheduled at
      // once, since every job update queues a scheduling pass.
      if (held_by_morphd(*job) && job->eligible_time_s > now_s &&
          job->eligible_time_s - now_s < kLongestEligibleWaitS)
        return false;  // the next round
      if (held_by_morphd(*job))
        if (const std::string error = slurm_.release(c.job); !error.empty()) return false;  // next round
      if (job->held_by_user && log_)
        log_(fmt::format("job {}: its user holds it; it starts on its new plan once released", c.job));
      move(e, Step::released, now_s);
      return true;
    case Step::released:
      move(e, Step::done, now_s);
      return false;
    case Step::done:
    case Step::rolled_back:
      return false;
  }
  return false;
}

}  // namespace morph::daemon
