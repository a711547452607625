#include "libmorph/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "libmorph/policy/placement.h"
#include "libmorph/util/error.h"

namespace morph::sim {
namespace {

using policy::Action;
using policy::JobAllocation;
using policy::JobState;

struct Speed {
  double iteration_s = 0;
  bool predicted = false;
  bool below_sla = false;  // a guaranteed job slower than its request on this GPU type
};

Speed speed_of(const JobState& j, const JobAllocation& a, const std::vector<policy::NodeState>& nodes,
               policy::PlanOracle& oracle, const TraceTruth& truth) {
  std::vector<int> gpus;
  for (const policy::Slice& s : a.slices) gpus.push_back(s.gpus);
  if (const double measured = truth.lookup(j.app, a.plan, gpus); measured > 0) {
    // The traces ran with the job's requested CPUs per GPU; other CPU counts scale the
    // measurement by the model's CPU sensitivity (which matters to offloading plans).
    const int requested = std::max(1, j.requested_cpus / std::max(1, j.requested_plan.gpus()));
    std::vector<policy::Slice> as_measured = a.slices;
    for (policy::Slice& s : as_measured) s.cpus = s.gpus * requested;
    if (as_measured == a.slices) return {measured, false};
    const double there = oracle.predict_s(j, a.plan, nodes, as_measured);
    const double here = oracle.predict_s(j, a.plan, nodes, a.slices);
    return {there > 0 && here > 0 ? measured * here / there : measured, false};
  }
  const double predicted = oracle.predict_s(j, a.plan, nodes, a.slices);
  if (predicted <= 0)
    throw Error(fmt::format("internal: job {} was given plan {} that cannot run on its {} GPUs", j.id,
                            to_string(a.plan), a.gpus()));
  return {predicted, true};
}

// The speed a guaranteed job's request promises on the GPU type of `a`: its requested
// plan on its requested GPUs packed on that type, measured where the traces have it.
double promised_iteration_s(const JobState& j, const JobAllocation& a, const std::vector<policy::NodeState>& nodes,
                            policy::PlanOracle& oracle, const TraceTruth& truth) {
  const int node = a.slices.front().node;
  const policy::Shape packed = policy::packed_shape(nodes, node, j.requested_plan.gpus());
  if (const double measured = truth.lookup(j.app, j.requested_plan, packed.gpus); measured > 0) return measured;
  const double rate = oracle.requested_rate(j, nodes, node);
  return rate > 0 ? 1 / rate : 0;
}

}  // namespace

SimResult simulate(const std::vector<SimJob>& jobs, const std::vector<policy::NodeState>& nodes,
                   policy::Policy& policy, policy::PlanOracle& oracle, const TraceTruth& truth,
                   const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (options.interval_s <= 0) throw Error("the scheduling interval must be positive");
  SimResult result;
  result.policy = policy.name();
  std::vector<std::size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return jobs[a].state.submit_time_s < jobs[b].state.submit_time_s;
  });
  for (const SimJob& j : jobs) {
    JobResult r;
    r.name = j.state.id;
    r.guaranteed = j.state.sla == Sla::guaranteed;
    r.requested_gpus = j.state.requested_plan.gpus();
    r.submit_s = j.state.submit_time_s;
    result.jobs.push_back(std::move(r));
  }

  policy::ClusterView view;
  view.nodes = nodes;
  view.quota_gpus = options.quota_gpus;
  view.restart_penalty_s = options.restart_penalty_s;
  view.min_reconfigure_gain = options.min_reconfigure_gain;
  std::vector<std::size_t> index;  // view.jobs[k] is jobs[index[k]]
  std::vector<Speed> speed;        // of view.jobs[k]'s current allocation
  std::vector<double> held_since;  // when view.jobs[k] got its current allocation
  std::size_t next = 0;
  double t = 0;
  const auto round_at_or_after = [&](double time) { return std::ceil(time / options.interval_s) * options.interval_s; };

  while (true) {
    while (next < order.size() && jobs[order[next]].state.submit_time_s <= t) {
      view.jobs.push_back(jobs[order[next]].state);
      index.push_back(order[next]);
      speed.push_back({});
      held_since.push_back(0);
      ++next;
    }
    if (view.jobs.empty()) {
      if (next == order.size()) break;
      t = round_at_or_after(jobs[order[next]].state.submit_time_s);
      continue;
    }

    // A round: the policy decides, the simulator checks and applies.
    view.now_s = t;
    for (std::size_t k = 0; k < view.jobs.size(); ++k) {
      JobState& j = view.jobs[k];
      policy::observe_iteration(j, j.running() && t >= j.ready_s ? speed[k].iteration_s : 0);
    }
    const std::vector<policy::Decision> decisions = policy.schedule(view, oracle);
    ++result.rounds;
    if (decisions.size() != view.jobs.size())
      throw Error(fmt::format("internal: policy {} decided for {} of {} jobs", policy.name(), decisions.size(),
                              view.jobs.size()));
    policy::NodePool capacity(view.nodes);
    for (const policy::Decision& d : decisions) capacity.take(d.target.slices);
    bool running = false;
    for (std::size_t k = 0; k < view.jobs.size(); ++k) {
      JobState& j = view.jobs[k];
      JobResult& r = result.jobs[index[k]];
      const JobAllocation& target = decisions[k].target;
      const Action action = policy::action_of(j, target);
      if (action == Action::reconfigure || action == Action::preempt) {
        r.gpu_seconds += j.current.gpus() * (t - held_since[k]);
        ++j.restarts;
      }
      if (action == Action::start || action == Action::reconfigure) {
        j.current = target;
        j.ready_s = t + options.restart_penalty_s;
        held_since[k] = t;
        speed[k] = speed_of(j, target, view.nodes, oracle, truth);
        if (j.sla == Sla::guaranteed) {
          const double promised = promised_iteration_s(j, target, view.nodes, oracle, truth);
          speed[k].below_sla = promised > 0 && speed[k].iteration_s > promised * (1 + 1e-9);
        }
        ++(speed[k].predicted ? result.predicted_runs : result.measured_runs);
        ++r.starts;
        if (r.first_start_s < 0) r.first_start_s = t;
      } else if (action == Action::preempt) {
        j.current = {};
      }
      running = running || j.running();
    }
    if (!running) {
      // An idle cluster the policy leaves idle: the waiting jobs can start only with new arrivals.
      if (next == order.size()) break;
      t = std::max(t + options.interval_s, round_at_or_after(jobs[order[next]].state.submit_time_s));
      continue;
    }

    // Progress until the next round; jobs that finish free their GPUs for that round.
    const double t_next = t + options.interval_s;
    std::size_t kept = 0;
    for (std::size_t k = 0; k < view.jobs.size(); ++k) {
      JobState& j = view.jobs[k];
      JobResult& r = result.jobs[index[k]];
      bool finished = false;
      if (j.running()) {
        const double from = std::max(t, j.ready_s);
        if (from < t_next) {
          const double rate = 1.0 / speed[k].iteration_s;
          const double possible = (t_next - from) * rate;
          const double until = j.remaining_iterations <= possible ? from + j.remaining_iterations / rate : t_next;
          r.run_seconds += until - from;
          if (speed[k].predicted) r.predicted_seconds += until - from;
          if (speed[k].below_sla) r.slow_seconds += until - from;
          if (j.remaining_iterations <= possible) {
            finished = true;
            r.end_s = until;
            r.gpu_seconds += j.current.gpus() * (until - held_since[k]);
          } else {
            j.remaining_iterations -= possible;
          }
        }
      }
      if (finished) continue;
      if (kept != k) {
        view.jobs[kept] = std::move(view.jobs[k]);
        index[kept] = index[k];
        speed[kept] = speed[k];
        held_since[kept] = held_since[k];
      }
      ++kept;
    }
    view.jobs.resize(kept);
    index.resize(kept);
    speed.resize(kept);
    held_since.resize(kept);
    t = t_next;
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace morph::sim
