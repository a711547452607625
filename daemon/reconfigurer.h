// Carries reconfigurations out through Slurm, one journaled step at a time (journal.h),
// so that morphd can stop at any moment and its successor finishes the work:
//
//   start, inplace, shrink   planned -> updated (the record; job_submit_morph makes a
//                            pending job's request follow it) -> done
//   requeue                  planned -> signalled (checkpoint signal to the batch step)
//                            -> requeued (the job exited 75 and Slurm requeued it; after
//                            CheckpointTimeoutSeconds + a grace, requeue_hold instead)
//                            -> held -> updated -> released -> done
//   preempt                  planned -> signalled -> requeued -> done
//
// Each step is taken only when the job's state shows the previous one took effect, and
// first checks that nobody else rewrote the record; a job that ended, or a record that
// changed under it, rolls the entry back (a held job is released first). A job is never
// left held by morphd: from `held` the entry reaches `released`, or rolls back once the job
// is released; a hold its user placed (JobHeldUser) is neither replaced nor released. A
// Slurm call that fails where its effect cannot be told (hold, requeue_hold, a held job's
// record) is tried again each round for 3 minutes; an entry that never began (`planned`
// past stale_plan_s, and Slurm shows nothing of it) rolls back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "daemon/journal.h"
#include "daemon/slurm_ops.h"

namespace morph::daemon {

struct ReconfigurerOptions {
  int checkpoint_signal = 12;         // morph.conf CheckpointSignal
  double checkpoint_timeout_s = 300;  // morph.conf CheckpointTimeoutSeconds
  double requeue_grace_s = 60;        // after that, before requeue_hold ends the job's wait
  double stale_plan_s = 180;          // an entry still `planned`, not begun, after this rolls back
  // Fault injection for the tests (morphd(8), MORPHD_CRASH_AFTER): SIGKILL morphd as soon
  // as an entry reaches this step ("" never), as `kill -9` at that moment would.
  std::string crash_after = {};
};

class Reconfigurer {
 public:
  using Log = std::function<void(const std::string&)>;
  Reconfigurer(SlurmOps& slurm, Journal& journal, ReconfigurerOptions options, Log log);

  // morph.conf's CheckpointSignal and CheckpointTimeoutSeconds read again (SIGHUP): for
  // the steps taken from now on, unfinished entries included.
  void set_checkpoint(int signal, double timeout_s) {
    options_.checkpoint_signal = signal;
    options_.checkpoint_timeout_s = timeout_s;
  }
  // A few rounds of morph.conf's SchedulingIntervalSeconds, at least 2 minutes.
  static double stale_plan_after(double scheduling_interval_s) { return std::max(120.0, 3 * scheduling_interval_s); }
  void set_stale_plan(double seconds) { options_.stale_plan_s = seconds; }

  // Journals `change` and takes its first step.
  void start(const Reconfiguration& change, double now_s);
  // Takes every unfinished entry as far as its job allows now: each round, and at start
  // (which is how a crash is recovered).
  void advance_all(double now_s);
  // Jobs with an unfinished reconfiguration: the policy leaves them alone.
  std::set<std::uint32_t> busy() const;

 private:
  // Returns true when it took a step (the caller tries the next one at once).
  bool step(JournalEntry& entry, double now_s);
  void move(JournalEntry& entry, Step next, double now_s, const std::string& why = {});

  SlurmOps& slurm_;
  Journal& journal_;
  ReconfigurerOptions options_;
  Log log_;
};

}  // namespace morph::daemon
