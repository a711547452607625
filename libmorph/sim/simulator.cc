#include "libmorph/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

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
  // The traces measured one GPU type per job: a heterogeneous allocation is predicted.
  const std::string& type = nodes.at(static_cast<std::size_t>(a.slices.front().node)).gpu.name;
  if (const double measured = a.groups.empty() ? truth.lookup(j.app, type, a.plan, gpus) : 0; measured > 0) {
    // The traces ran with the job's requested CPUs per GPU; other CPU counts scale the
    // measurement by the model's CPU sensitivity (which matters to offloading plans).
    const int requested = std::max(1, j.requested_cpus / std::max(1, j.requested_plan.gpus()));
    std::vector<policy::Slice> as_measured = a.slices;
    for (policy::Slice& s : as_measured) s.cpus = s.gpus * requested;
    if (as_measured == a.slices) return {measured, false};
    const double there = oracle.predict_s(j, a.plan, nodes, as_measured, a.groups);
    const double here = oracle.predict_s(j, a.plan, nodes, a.slices, a.groups);
    return {there > 0 && here > 0 ? measured * here / there : measured, false};
  }
  const double predicted = oracle.predict_s(j, a.plan, nodes, a.slices, a.groups);
  if (predicted <= 0)
    throw Error(fmt::format("internal: job {} was given plan {} that cannot run on its {} GPUs", j.id,
                            to_string(a.plan), a.gpus()));
  return {predicted, true};
}

// The speed a guaranteed job's request promises on the GPU type of `a`: its requested
// plan on its requested GPUs on whole nodes of that type, measured where the traces have it.
double promised_iteration_s(const JobState& j, const JobAllocation& a, const std::vector<policy::NodeState>& nodes,
                            policy::PlanOracle& oracle, const TraceTruth& truth) {
  const int node = a.slices.front().node;
  const policy::Shape packed = policy::request_shape(nodes, node, j.requested_plan.gpus());
  const std::string& type = nodes.at(static_cast<std::size_t>(node)).gpu.name;
  if (const double measured = truth.lookup(j.app, type, j.requested_plan, packed.gpus); measured > 0) return measured;
  const double rate = oracle.requested_rate(j, nodes, node);
  return rate > 0 ? 1 / rate : 0;
}

// What the simulator keeps about a job of the view besides what the policy sees.
struct Tracked {
  std::size_t job = 0;      // index into the workload and the result
  Speed speed;              // of its current allocation
  double held_since_s = 0;  // when it got its current allocation
  double held_s = 0;        // seconds it held GPUs before that
  double remaining = 0;     // true iterations left (the policy sees only JobState's estimates)
};

// One simulation. Each round admits the jobs submitted by then, lets the policy decide and
// applies its decisions; then the jobs progress until the next round, `interval_s` later.
class Replay {
 public:
  Replay(const std::vector<SimJob>& jobs, const std::vector<policy::NodeState>& nodes, policy::Policy& policy,
         policy::PlanOracle& oracle, const TraceTruth& truth, const SimOptions& options, policy::PlanOracle* world);
  SimResult run();

 private:
  // The first round at or after `time_s`. ceil(t/i)*i can fall just short of t where i
  // has no exact binary value (63 s at 0.7 s: 62.99999999999999), and a job not yet
  // submitted at its round is never admitted: the next round then.
  double round_at_or_after(double time_s) const {
    const double k = std::ceil(time_s / options_.interval_s);
    const double at = k * options_.interval_s;
    return at >= time_s ? at : (k + 1) * options_.interval_s;
  }
  bool arrivals_left() const { return next_ < order_.size(); }
  double next_arrival_s() const { return jobs_[order_[next_]].state.submit_time_s; }
  bool any_running() const;

  // The models the policy plans with: the refitted ones where SimOptions::refit is on.
  policy::PlanOracle& planning() { return refitted_ ? *refitted_ : oracle_; }

  void admit();
  void observe();
  void refit();
  std::vector<policy::Decision> decide();
  bool apply(const std::vector<policy::Decision>& decisions);
  bool steady();
  void skip_steady_rounds();
  void advance();
  std::optional<double> progress(std::size_t k, double from_s, double to_s);
  void check_livelock() const;
  void report() const;

  const std::vector<SimJob>& jobs_;
  policy::Policy& policy_;
  policy::PlanOracle& oracle_;  // the models the policy starts with
  policy::PlanOracle& world_;   // the simulated world's models: the speeds the traces lack
  std::optional<policy::PlanOracle> refitted_;
  policy::ModelRefitter refitter_;
  const TraceTruth& truth_;
  const SimOptions& options_;
  std::vector<std::size_t> order_;  // jobs_ by submission time
  std::size_t next_ = 0;            // order_[next_] arrives next
  policy::ClusterView view_;
  std::vector<Tracked> tracked_;  // tracked_[k] is about view_.jobs[k]
  double now_ = 0;  // the current round
  double progressed_s_ = 0;  // when a job last progressed, or the cluster was last idle
  int finished_ = 0;
  SimResult result_;
};

Replay::Replay(const std::vector<SimJob>& jobs, const std::vector<policy::NodeState>& nodes, policy::Policy& policy,
               policy::PlanOracle& oracle, const TraceTruth& truth, const SimOptions& options,
               policy::PlanOracle* world)
    : jobs_(jobs),
      policy_(policy),
      oracle_(oracle),
      world_(world != nullptr ? *world : oracle),
      refitter_(options.refit),
      truth_(truth),
      options_(options),
      order_(jobs.size()) {
  if (options.interval_s <= 0) throw Error("the scheduling interval must be positive");
  if (options.refit.error_threshold > 0) refitted_.emplace(oracle);
  result_.policy = policy.name();
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
    return jobs[a].state.submit_time_s < jobs[b].state.submit_time_s;
  });
  for (const SimJob& j : jobs) {
    JobResult r;
    r.name = j.state.id;
    r.guaranteed = j.state.sla == Sla::guaranteed;
    r.requested_gpus = j.state.requested_plan.gpus();
    r.submit_s = j.state.submit_time_s;
    result_.jobs.push_back(std::move(r));
  }
  view_.nodes = nodes;
  view_.quota_gpus = options.quota_gpus;
  view_.restart = options.restart;
  view_.payback_s = options.payback_s;
  view_.min_reconfigure_gain = options.min_reconfigure_gain;
  view_.starvation_limit_s = options.starvation_limit_s;
  view_.unknown_length_prior_s = options.unknown_length_prior_s;
  view_.heterogeneous_jobs = options.heterogeneous_jobs;
  view_.restart_backoff = options.restart_backoff;
}

bool Replay::any_running() const {
  return std::any_of(view_.jobs.begin(), view_.jobs.end(), [](const JobState& j) { return j.running(); });
}

SimResult Replay::run() {
  const auto wall_start = std::chrono::steady_clock::now();
  while (true) {
    admit();
    if (view_.jobs.empty()) {
      if (!arrivals_left()) break;
      now_ = progressed_s_ = round_at_or_after(next_arrival_s());
      continue;
    }
    observe();
    refit();
    const bool changed = apply(decide());
    report();
    if (!any_running() && !changed) {
      // An idle cluster the policy leaves idle: the waiting jobs can start only with new
      // arrivals. (A round that preempted the last running job is followed by the next.)
      if (!arrivals_left()) break;
      now_ = progressed_s_ = std::max(now_ + options_.interval_s, round_at_or_after(next_arrival_s()));
      continue;
    }
    if (!changed && steady()) skip_steady_rounds();
    advance();
    now_ += options_.interval_s;
    check_livelock();
  }
  result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return std::move(result_);
}

// The jobs submitted by this round join the view.
void Replay::admit() {
  for (; arrivals_left() && next_arrival_s() <= now_; ++next_) {
    const SimJob& job = jobs_[order_[next_]];
    view_.jobs.push_back(job.state);
    tracked_.push_back({order_[next_], {}, 0, 0, job.steps});
  }
}

// Running jobs past their (re)start report their iteration time; every job's time
// without GPUs is what morphd would read from Slurm.
void Replay::observe() {
  view_.now_s = now_;
  for (std::size_t k = 0; k < view_.jobs.size(); ++k) {
    JobState& j = view_.jobs[k];
    const Tracked& x = tracked_[k];
    policy::observe_iteration(j, j.running() && view_.now_s >= j.ready_s ? x.speed.iteration_s : 0,
                              policy::on_requested_nodes(view_.nodes, j));
    j.waited_s = now_ - j.submit_time_s - x.held_s - (j.running() ? now_ - x.held_since_s : 0);
  }
}

// As morphd each round: the models that mispredict what the running jobs report are
// refitted, and the policy plans with the refit it keeps.
void Replay::refit() {
  if (!refitted_) return;
  for (policy::ModelRefit& r : refitter_.round(view_, refitted_->apps())) {
    ++result_.refits;
    if (!r.accepted) continue;
    ++result_.refits_kept;
    refitted_->use_refit(r.model, r.perf);
  }
}

// The policy's decisions, checked against the view, the cluster and the jobs' partitions.
std::vector<policy::Decision> Replay::decide() {
  std::vector<policy::Decision> decisions = policy_.schedule(view_, planning());
  ++result_.rounds;
  if (decisions.size() != view_.jobs.size())
    throw Error(fmt::format("internal: policy {} decided for {} of {} jobs", policy_.name(), decisions.size(),
                            view_.jobs.size()));
  policy::NodePool capacity(view_.nodes);
  for (std::size_t k = 0; k < decisions.size(); ++k) {
    const JobState& j = view_.jobs[k];
    const JobAllocation& target = decisions[k].target;
    capacity.take(target.slices);
    for (const policy::Slice& s : target.slices)
      if (!j.nodes_allowed.empty() && !j.nodes_allowed[static_cast<std::size_t>(s.node)])
        throw Error(fmt::format("internal: policy {} placed job {} on {}, outside its partitions", policy_.name(), j.id,
                                view_.nodes[static_cast<std::size_t>(s.node)].name));
  }
  return decisions;
}

// Starts, restarts and preemptions; whether there was any.
bool Replay::apply(const std::vector<policy::Decision>& decisions) {
  const double now = view_.now_s;
  bool changed = false;
  for (std::size_t k = 0; k < view_.jobs.size(); ++k) {
    JobState& j = view_.jobs[k];
    Tracked& x = tracked_[k];
    JobResult& r = result_.jobs[x.job];
    const JobAllocation& target = decisions[k].target;
    const Action action = policy::action_of(j, target);
    if (action == Action::keep || action == Action::wait) continue;
    changed = true;
    if (action == Action::reconfigure || action == Action::preempt) {
      r.gpu_seconds += j.current.gpus() * (now - x.held_since_s);
      x.held_s += now - x.held_since_s;
      ++j.restarts;
      j.last_restart_s = now;
    }
    if (action == Action::preempt) {
      j.current = {};
      continue;
    }
    const policy::ChangePath path = policy::change_path(j, view_.nodes, target.slices, target.plan, planning());
    j.current = target;
    // The record's prediction, which tells the policy later whether a refit changed its mind.
    j.planned_iteration_s = planning().predict_s(j, target.plan, view_.nodes, target.slices, target.groups);
    j.ready_s = now + options_.restart.of(path);
    // As morphd's journal has it: a start counts as much as a reconfiguration, and a job
    // pays its restart back from when it runs again.
    j.last_restart_s = j.ready_s;
    x.held_since_s = now;
    x.speed = speed_of(j, target, view_.nodes, world_, truth_);
    if (j.sla == Sla::guaranteed) {
      const double promised = promised_iteration_s(j, target, view_.nodes, world_, truth_);
      x.speed.below_sla = promised > 0 && x.speed.iteration_s > promised * (1 + 1e-9);
    }
    ++(x.speed.predicted ? result_.predicted_runs : result_.measured_runs);
    ++r.starts;
    if (r.first_start_s < 0) r.first_start_s = now;
  }
  return changed;
}

// After a round that changed nothing: whether the rounds until the next arrival or
// completion would decide the same, as every running job is past its restart (what it
// reports stays the same) and the policy says so.
bool Replay::steady() {
  for (const JobState& j : view_.jobs)
    if (j.running() && j.ready_s > view_.now_s) return false;
  return policy_.steady(view_, planning());
}

// Jumps over the rounds after this one that would decide the same, stopping a round or
// more before the next arrival and two or more before the next completion. The jobs progress round by
// round as advance() would have moved them, bit for bit, unless the stretch is longer
// than kRoundByRound rounds: then in one step, which may differ from the sum of the
// rounds in the last bits.
void Replay::skip_steady_rounds() {
  constexpr double kRoundByRound = 1 << 20;
  const double interval = options_.interval_s;
  double rounds = std::numeric_limits<double>::infinity();
  if (arrivals_left()) rounds = std::floor((next_arrival_s() - now_) / interval) - 1;
  for (std::size_t k = 0; k < view_.jobs.size(); ++k)
    if (view_.jobs[k].running()) {
      const double work_s = tracked_[k].remaining * tracked_[k].speed.iteration_s;
      rounds = std::min(rounds, std::floor(work_s / interval) - 2);
    }
  if (!(rounds >= 1)) return;
  auto progress_all = [&](double to_s) {
    for (std::size_t k = 0; k < view_.jobs.size(); ++k)
      if (view_.jobs[k].running() && progress(k, now_, to_s))
        throw Error(fmt::format("internal: job {} finished in a skipped round", view_.jobs[k].id));
    now_ = to_s;
  };
  if (rounds > kRoundByRound)
    progress_all(now_ + rounds * interval);
  else
    for (double q = 0; q < rounds; ++q) progress_all(now_ + interval);
  result_.rounds += static_cast<long>(rounds);
  result_.skipped_rounds += static_cast<long>(rounds);
}

// Progress until the next round; jobs that finish free their GPUs for that round.
void Replay::advance() {
  const double t = now_;
  const double t_next = now_ + options_.interval_s;
  std::size_t kept = 0;
  for (std::size_t k = 0; k < view_.jobs.size(); ++k) {
    JobState& j = view_.jobs[k];
    Tracked& x = tracked_[k];
    JobResult& r = result_.jobs[x.job];
    const double from = std::max(t, j.ready_s);
    const std::optional<double> end_s = j.running() && from < t_next ? progress(k, from, t_next) : std::nullopt;
    if (end_s) {
      r.end_s = *end_s;
      r.gpu_seconds += j.current.gpus() * (*end_s - x.held_since_s);
      ++finished_;
      continue;
    }
    if (kept != k) {
      view_.jobs[kept] = std::move(view_.jobs[k]);
      tracked_[kept] = tracked_[k];
    }
    ++kept;
  }
  view_.jobs.resize(kept);
  tracked_.resize(kept);
}

// Running job k makes progress from `from_s` to `to_s`, or until it finishes: then
// returns when. Its running time is counted, with the shares of it at a predicted speed
// and below its guarantee.
std::optional<double> Replay::progress(std::size_t k, double from_s, double to_s) {
  JobState& j = view_.jobs[k];
  Tracked& x = tracked_[k];
  JobResult& r = result_.jobs[x.job];
  const double rate = 1.0 / x.speed.iteration_s;
  const double possible = (to_s - from_s) * rate;
  const bool finishes = x.remaining <= possible;
  const double until = finishes ? from_s + x.remaining / rate : to_s;
  r.run_seconds += until - from_s;
  if (x.speed.predicted) r.predicted_seconds += until - from_s;
  if (x.speed.below_sla) r.slow_seconds += until - from_s;
  if (possible > 0) progressed_s_ = until;
  if (finishes) return until;
  x.remaining -= possible;
  j.attained_iterations += possible;
  return std::nullopt;
}

// Jobs that never get past their restarts, or a policy that starts and preempts them in
// turn: it moves them faster than they run. A day of that ends the replay, which would
// otherwise never end; no restart takes that long.
void Replay::check_livelock() const {
  constexpr double kStallLimitS = 24 * 3600;
  if (now_ - progressed_s_ <= kStallLimitS) return;
  throw Error(fmt::format("{}: no job progressed from {:.0f} s to {:.0f} s of the replay ({} jobs submitted, {} "
                          "running): the policy restarts its jobs faster than they run",
                          policy_.name(), progressed_s_, now_, view_.jobs.size(),
                          std::count_if(view_.jobs.begin(), view_.jobs.end(),
                                        [](const JobState& j) { return j.running(); })));
}

void Replay::report() const {
  if (options_.on_round)
    options_.on_round({now_, finished_, static_cast<int>(jobs_.size()), result_.rounds});
}

}  // namespace

SimResult simulate(const std::vector<SimJob>& jobs, const std::vector<policy::NodeState>& nodes,
                   policy::Policy& policy, policy::PlanOracle& oracle, const TraceTruth& truth,
                   const SimOptions& options, policy::PlanOracle* world) {
  return Replay(jobs, nodes, policy, oracle, truth, options, world).run();
}

}  // namespace morph::sim
