#include "libmorph/sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace morph::sim {
namespace {

Summary summary_of(const std::vector<const JobResult*>& jobs) {
  Summary s;
  s.jobs = static_cast<int>(jobs.size());
  std::vector<double> jct;
  double queue = 0;
  double progress = 0;
  double restarts = 0;
  double run = 0;
  double slow = 0;
  for (const JobResult* j : jobs) {
    s.gpu_hours += j->gpu_seconds / 3600;
    run += j->run_seconds;
    slow += j->slow_seconds;
    restarts += j->restarts();
    if (!j->finished()) continue;
    jct.push_back(j->jct_s());
    queue += j->queue_s();
    progress += j->run_seconds;
  }
  s.finished = static_cast<int>(jct.size());
  s.slow_share = run > 0 ? slow / run : 0;
  if (!jobs.empty()) s.restarts_per_job = restarts / static_cast<double>(jobs.size());
  if (jct.empty()) return s;
  std::sort(jct.begin(), jct.end());
  double total = 0;
  for (double x : jct) total += x;
  s.avg_jct_s = total / static_cast<double>(jct.size());
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(jct.size())));
  s.p99_jct_s = jct[std::max<std::size_t>(rank, 1) - 1];
  s.avg_queue_s = queue / static_cast<double>(jct.size());
  s.avg_progress_s = progress / static_cast<double>(jct.size());
  return s;
}

}  // namespace

Report summarize(const SimResult& result) {
  Report r;
  r.policy = result.policy;
  r.measured_runs = result.measured_runs;
  r.predicted_runs = result.predicted_runs;
  r.refits = result.refits;
  r.refits_kept = result.refits_kept;
  r.rounds = result.rounds;
  r.skipped_rounds = result.skipped_rounds;
  r.wall_s = result.wall_s;
  std::vector<const JobResult*> all, guaranteed, best_effort;
  double first = std::numeric_limits<double>::infinity();
  double last = 0;
  double run = 0;
  double predicted = 0;
  for (const JobResult& j : result.jobs) {
    all.push_back(&j);
    (j.guaranteed ? guaranteed : best_effort).push_back(&j);
    first = std::min(first, j.submit_s);
    if (j.finished())
      last = std::max(last, j.end_s);
    else
      r.never_finished.push_back(j.name);
    run += j.run_seconds;
    predicted += j.predicted_seconds;
  }
  r.all = summary_of(all);
  r.guaranteed = summary_of(guaranteed);
  r.best_effort = summary_of(best_effort);
  r.makespan_s = all.empty() ? 0 : std::max(0.0, last - first);
  r.predicted_share = run > 0 ? predicted / run : 0;
  return r;
}

}  // namespace morph::sim
