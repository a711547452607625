#include "profiler/job_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "libmorph/launch/metrics_line.h"
#include "libmorph/util/error.h"

namespace morph::profile {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(100);
constexpr auto kKillGrace = std::chrono::seconds(30);

std::vector<double> read_iterations(const std::string& path) {
  std::vector<double> seconds;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written
    try {
      if (auto m = launch::parse_metrics_record(line)) seconds.push_back(m->seconds);
    } catch (const Error&) {
    }
  }
  return seconds;
}

pid_t start(const JobRunSpec& spec) {
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int log = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) throw Error(fmt::format("{}: cannot write: {}", spec.log_path, std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log);
  if (pid < 0) throw Error(fmt::format("cannot start {}: {}", spec.argv.front(), std::strerror(errno)));
  return pid;
}

// waitpid without blocking; the exit status, or -1 while it runs.
int poll_exit(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int stop(pid_t pid) {
  ::kill(pid, SIGTERM);
  const auto deadline = Clock::now() + kKillGrace;
  while (Clock::now() < deadline) {
    if (int rc = poll_exit(pid); rc >= 0) return rc;
    std::this_thread::sleep_for(kPoll);
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return 128 + SIGKILL;
}

}  // namespace

JobRunResult run_profile_step(const JobRunSpec& spec) {
  JobRunResult r;
  ::unlink(spec.metrics_path.c_str());
  const auto began = Clock::now();
  pid_t pid = -1;
  try {
    pid = start(spec);
  } catch (const Error& e) {
    r.failure = e.what();
    return r;
  }
  const auto deadline = began + std::chrono::duration<double>(spec.timeout_s);
  int rc = -1;
  for (;;) {
    r.iteration_s = read_iterations(spec.metrics_path);
    if (std::ssize(r.iteration_s) >= spec.iterations_wanted) break;
    if ((rc = poll_exit(pid)) >= 0) break;
    if (Clock::now() >= deadline) {
      r.failure = fmt::format("{} of {} iterations after the timeout of {:g} s", r.iteration_s.size(),
                              spec.iterations_wanted, spec.timeout_s);
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  if (rc < 0) stop(pid);
  r.wall_s = std::chrono::duration<double>(Clock::now() - began).count();
  r.iteration_s = read_iterations(spec.metrics_path);
  if (r.failure.empty() && std::ssize(r.iteration_s) < spec.iterations_wanted)
    r.failure = fmt::format("the step ended (exit status {}) after {} of {} iterations; see {}", rc,
                            r.iteration_s.size(), spec.iterations_wanted, spec.log_path);
  return r;
}

double median_after_warmup(const std::vector<double>& seconds, int warmup) {
  if (std::ssize(seconds) <= warmup) return 0;
  std::vector<double> kept(seconds.begin() + warmup, seconds.end());
  std::sort(kept.begin(), kept.end());
  const std::size_t n = kept.size();
  return n % 2 == 1 ? kept[n / 2] : (kept[n / 2 - 1] + kept[n / 2]) / 2;
}

}  // namespace morph::profile
