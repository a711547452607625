// Runs the trainer's processes and stays between them and Slurm: each child in its own
// process group, the child itself with PR_SET_PDEATHSIG (its own children end with the
// step, by Slurm's process tracking); the checkpoint signal forwarded and its save awaited for
// a bounded time; SIGTERM, SIGINT and SIGHUP forwarded, then SIGKILL after a grace
// period; a crashed rank ending the others; the metrics FIFOs read as lines arrive.
// The checkpoint signal goes to each trainer process, SIGTERM and SIGKILL to its group.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "libmorph/launch/driver_contract.h"

namespace morph::launcher {

using launch::kExitRequeue;  // RequeueExit=75 in slurm.conf requeues the job
inline constexpr int kExitRefuse = 78;   // EX_CONFIG: nothing was started

struct ChildSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // set on top of morphrun's own
  std::function<void()> before_exec;                     // in the child (CPU binding); may throw
  std::string metrics_fifo;                              // read while the child runs; "" for none
};

struct SupervisorOptions {
  int checkpoint_signal = 12;        // SIGUSR2
  double checkpoint_timeout_s = 300;
  double kill_grace_s = 10;          // between SIGTERM and SIGKILL
  // A child with a metrics FIFO takes the checkpoint signal only once it has written a
  // line (it is training, so its handler is installed) or this long after its start: a
  // signal before would kill it (SIGUSR2's default action).
  double signal_ready_s = 60;
  std::function<void(std::size_t child, const std::string& line)> on_metrics;  // one line of child's FIFO
  std::function<void()> on_checkpoint_signal;                // the signal arrived (before forwarding)
  // false: the checkpoint signal is only reported (on_checkpoint_signal), never forwarded:
  // a child that cannot save (a reshard) finishes its work first.
  bool forward_checkpoint_signal = true;
  // Set: a checkpoint is asked for through it rather than by signalling the children;
  // returning false falls back to the signal. morphrun --driver: its child is srun, which
  // would make the signal one to every process of the step (save_request.h).
  std::function<bool()> request_checkpoint;
  // true: a child that exits 0 finished, checkpoint asked or not. morphrun --driver's
  // child is srun, whose tasks exit 75 when a trainer saved: 0 means they all finished.
  // false: a trainer that exits 0 after the signal reached it saved.
  bool zero_is_finished = false;
  // Called every tick_s while the children run; returning true asks for a checkpoint as
  // the signal would (morphrun --driver: the job's plan changed).
  std::function<bool()> on_tick;
  double tick_s = 0;  // 0: no ticks
};

enum class Outcome {
  finished,      // every child exited 0
  checkpointed,  // a checkpoint was asked for, a child saved (exit 75, or 0 after the signal), none failed
  timed_out,     // the checkpoint signal came and the children did not exit in time, or failed
  failed,        // a child exited non-zero or was killed
  terminated,    // SIGTERM/SIGINT/SIGHUP came
};

struct SupervisorResult {
  Outcome outcome = Outcome::finished;
  int exit_code = 0;  // what morphrun exits with
  std::string message;
};

// Blocks the signals it handles; call before anything else starts threads.
void block_supervised_signals(int checkpoint_signal);

// The one exit code for an outcome: 0; kExitRequeue after a checkpoint (saved or timed
// out: the older checkpoint is intact); the first failed child's own code (128+signal
// when killed); 128+signal when terminated.
SupervisorResult supervise(const std::vector<ChildSpec>& children, const SupervisorOptions& options);

// Creates a FIFO `path` (mode 0600). Throws morph::Error.
void make_fifo(const std::string& path);

}  // namespace morph::launcher
