#include "launcher/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::launcher {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHandled[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};

sigset_t handled_signals(int checkpoint_signal) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, checkpoint_signal);
  for (int s : kHandled) sigaddset(&set, s);
  return set;
}

// An ignored signal is discarded, blocked or not, so signalfd never sees it: a parent
// that ignored SIGCHLD (the kernel then reaps the trainers, and waitpid never reports
// them) or SIGTERM would leave morphrun waiting for ever. Ignored ones become default.
void unignore(int checkpoint_signal) {
  auto restore = [](int s) {
    struct sigaction old {};
    if (sigaction(s, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigaction(s, &dfl, nullptr);
    }
  };
  restore(checkpoint_signal);
  for (int s : kHandled) restore(s);
}

struct Child {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  bool ready = false;      // may take the checkpoint signal: it reported an iteration, or long enough passed
  bool signalled = false;  // got the checkpoint signal
  int fifo_fd = -1;
  int fifo_keep = -1;  // our own write end: the read end sees no EOF between writers
  std::string pending;
};

// Under `srun --pty` morphrun's group has the terminal on its standard input: a trainer in
// a group of its own would stop (SIGTTIN) at its first read of it, a debugger's prompt say.
// The first child takes the terminal's foreground, the others read /dev/null; morphrun
// takes the foreground back when supervise() returns.
enum class TerminalRole { none, foreground, no_input };

bool set_foreground(pid_t group) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);  // a background group may then set it
  sigprocmask(SIG_BLOCK, &ttou, &old);
  const bool set = tcsetpgrp(STDIN_FILENO, group) == 0;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return set;
}

class Terminal {
 public:
  Terminal() : ours_(isatty(STDIN_FILENO) == 1 && tcgetpgrp(STDIN_FILENO) == getpgrp()) {}
  ~Terminal() {
    if (ours_) set_foreground(getpgrp());
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  TerminalRole role(std::size_t child) const {
    return !ours_ ? TerminalRole::none : child == 0 ? TerminalRole::foreground : TerminalRole::no_input;
  }

 private:
  bool ours_;
};

// In the child: its own group, killed with its parent, default signals, then exec.
[[noreturn]] void exec_child(const ChildSpec& spec, pid_t parent, TerminalRole terminal) {
  setpgid(0, 0);
  if (terminal == TerminalRole::foreground) set_foreground(getpid());
  if (terminal == TerminalRole::no_input)
    if (const int null = open("/dev/null", O_RDONLY); null >= 0) {
      dup2(null, STDIN_FILENO);
      if (null != STDIN_FILENO) close(null);
    }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the handled signals' dispositions are default (unignore)
  try {
    if (spec.before_exec) spec.before_exec();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "morphrun: %s\n", e.what());
    _exit(kExitRefuse);
  }
  for (const auto& [name, value] : spec.env) setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "morphrun: cannot run %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

// The checkpoint signal goes to each trainer process only: its helpers (data-loader
// workers) share its group and would die of a signal they do not handle.
void signal_trainers(std::vector<Child>& children, int signal) {
  for (Child& c : children)
    if (c.running && c.ready && !c.signalled) {
      kill(c.pid, signal);
      c.signalled = true;
    }
}

void signal_groups(const std::vector<Child>& children, int signal) {
  for (const Child& c : children)
    if (c.pid > 0) kill(-c.pid, signal);  // the group: the trainer and whatever it started
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

void drain_fifo(Child& c, std::size_t index, const SupervisorOptions& o) {
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(c.fifo_fd, buffer, sizeof buffer);
    if (n <= 0) break;
    c.ready = true;  // in its training loop: its handler is installed
    c.pending.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t end; (end = c.pending.find('\n')) != std::string::npos;) {
      if (o.on_metrics) o.on_metrics(index, c.pending.substr(0, end));
      c.pending.erase(0, end + 1);
    }
    if (c.pending.size() > 65536) c.pending.clear();  // a runaway line is dropped, not kept
  }
}

}  // namespace

void block_supervised_signals(int checkpoint_signal) {
  unignore(checkpoint_signal);
  const sigset_t set = handled_signals(checkpoint_signal);
  sigprocmask(SIG_BLOCK, &set, nullptr);
}

void make_fifo(const std::string& path) {
  if (mkfifo(path.c_str(), 0600) != 0)
    throw Error(fmt::format("cannot create the metrics FIFO {}: {}", path, std::strerror(errno)));
}

SupervisorResult supervise(const std::vector<ChildSpec>& specs, const SupervisorOptions& o) {
  unignore(o.checkpoint_signal);
  const sigset_t set = handled_signals(o.checkpoint_signal);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  const int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) throw Error(fmt::format("signalfd: {}", std::strerror(errno)));

  std::vector<Child> children(specs.size());
  const pid_t self = getpid();
  const Terminal terminal;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    Child& c = children[i];
    if (!specs[i].metrics_fifo.empty()) {
      c.fifo_fd = open(specs[i].metrics_fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      c.fifo_keep = open(specs[i].metrics_fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    }
    c.pid = fork();
    if (c.pid < 0) {
      signal_groups(children, SIGKILL);
      throw Error(fmt::format("fork: {}", std::strerror(errno)));
    }
    if (c.pid == 0) exec_child(specs[i], self, terminal.role(i));
    setpgid(c.pid, c.pid);  // also here: no window in which a signal misses the group
    c.running = true;
    c.ready = specs[i].metrics_fifo.empty();
  }

  SupervisorResult result;
  bool checkpoint_asked = false, terminating = false, killed = false;
  int saved = 0;  // children that ended with a checkpoint after one was asked for
  bool stopped_while_saving = false;  // a stop signal came during the save, which went on
  std::optional<Clock::time_point> deadline;  // when the next escalation is due
  const auto tick = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.tick_s));
  const Clock::time_point ready_by =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.signal_ready_s));
  Clock::time_point next_tick = Clock::now() + tick;
  bool by_signal = true;  // the checkpoint asked for goes to the trainers as the signal
  auto ask_checkpoint = [&] {
    if (checkpoint_asked || terminating) return;
    checkpoint_asked = true;
    by_signal = !o.request_checkpoint || !o.request_checkpoint();
    if (by_signal) signal_trainers(children, o.checkpoint_signal);
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(o.checkpoint_timeout_s));
  };
  auto terminate = [&](int signal, Outcome outcome, int code, std::string message) {
    if (terminating) return;
    terminating = true;
    result = {outcome, code, std::move(message)};
    signal_groups(children, signal);
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.kill_grace_s));
  };

  auto running = [&] {
    for (const Child& c : children)
      if (c.running) return true;
    return false;
  };
  while (running()) {
    std::vector<pollfd> fds{{sfd, POLLIN, 0}};
    for (const Child& c : children)
      if (c.fifo_fd >= 0) fds.push_back({c.fifo_fd, POLLIN, 0});
    int timeout_ms = -1;
    const Clock::time_point now = Clock::now();
    auto wait_until = [&](Clock::time_point when) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when - now).count();
      const int bounded = static_cast<int>(std::max<long long>(0, ms));
      timeout_ms = timeout_ms < 0 ? bounded : std::min(timeout_ms, bounded);
    };
    if (deadline) wait_until(*deadline);
    if (checkpoint_asked && now < ready_by) wait_until(ready_by);
    if (o.on_tick && o.tick_s > 0) wait_until(next_tick);
    const int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) throw Error(fmt::format("poll: {}", std::strerror(errno)));

    for (std::size_t i = 0; i < children.size(); ++i)
      if (children[i].fifo_fd >= 0) drain_fifo(children[i], i, o);
    if (Clock::now() >= ready_by)
      for (Child& c : children) c.ready = true;
    // A checkpoint asked for before a trainer was ready reaches it now.
    if (checkpoint_asked && by_signal && !terminating) signal_trainers(children, o.checkpoint_signal);

    signalfd_siginfo info;
    while (read(sfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int signal = static_cast<int>(info.ssi_signo);
      if (signal == SIGCHLD) continue;  // reaped below
      if (signal == o.checkpoint_signal) {
        if (o.on_checkpoint_signal) o.on_checkpoint_signal();
        if (o.forward_checkpoint_signal) ask_checkpoint();
      } else if (checkpoint_asked && !terminating && !stopped_while_saving) {
        // Told to stop while the trainers save: srun --kill-on-bad-exit stops the other
        // tasks of a step once one of them saved and exited 75 (Slurm's own checkpoint
        // signal, --signal=USR2@...), as scancel does. The save goes on, bounded by
        // CheckpointTimeoutSeconds and slurmstepd's SIGKILL, and a second signal ends it.
        stopped_while_saving = true;
        std::fprintf(stderr, "morphrun: %s received while the trainer saves: the save goes on\n", strsignal(signal));
      } else {
        terminate(SIGTERM, Outcome::terminated, 128 + signal,
                  fmt::format("{} received: the trainer was stopped", strsignal(signal)));
      }
    }

    for (Child& c : children) {
      if (!c.running) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.running = false;
      c.status = status;
      const int code = exit_code_of(status);
      // A trainer that exits 0 without the signal ever reaching it finished its training;
      // one that exits 75, or 0 after the signal, saved.
      const bool saved_one =
          checkpoint_asked && (code == kExitRequeue || (code == 0 && c.signalled && !o.zero_is_finished));
      saved += saved_one;
      if (code != 0 && !saved_one && !terminating && checkpoint_asked)
        terminate(SIGTERM, Outcome::timed_out, kExitRequeue,
                  fmt::format("the trainer (pid {}) ended with {} after the checkpoint signal; the job resumes from "
                              "its last committed checkpoint",
                              c.pid, code));
      else if (code != 0 && !saved_one && !terminating)
        terminate(SIGTERM, Outcome::failed, code,
                  fmt::format("the trainer (pid {}) {} {}", c.pid, WIFSIGNALED(status) ? "was killed by signal" : "exited with",
                              WIFSIGNALED(status) ? WTERMSIG(status) : code));
    }

    const Clock::time_point after = Clock::now();
    if (o.on_tick && o.tick_s > 0 && after >= next_tick) {
      next_tick = after + tick;
      if (o.on_tick()) ask_checkpoint();
    }
    if (deadline && after >= *deadline && running()) {
      if (terminating && !killed) {
        signal_groups(children, SIGKILL);
        killed = true;
        deadline.reset();
      } else if (checkpoint_asked && !terminating) {
        terminate(SIGTERM, Outcome::timed_out, kExitRequeue,
                  fmt::format("the trainer did not save and exit within {} s of the checkpoint signal "
                              "(CheckpointTimeoutSeconds); the job resumes from its previous checkpoint",
                              o.checkpoint_timeout_s));
      }
    }
  }
  // Whatever the children left behind in their groups goes with them.
  signal_groups(children, SIGKILL);
  for (std::size_t i = 0; i < children.size(); ++i) {
    Child& c = children[i];
    if (c.fifo_fd >= 0) {
      drain_fifo(c, i, o);
      close(c.fifo_fd);
    }
    if (c.fifo_keep >= 0) close(c.fifo_keep);
  }
  close(sfd);
  if (!terminating) {  // every child ended with 0 or a save: checkpointed when one saved
    result.outcome = saved > 0 ? Outcome::checkpointed : Outcome::finished;
    result.exit_code = saved > 0 ? kExitRequeue : 0;
  }
  return result;
}

}  // namespace morph::launcher
