#include "daemon/scheduler.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::daemon {

Scheduler::Scheduler(ViewContext context, std::unique_ptr<policy::Policy> policy, Reconfigurer& reconfigurer,
                     Journal& journal)
    : context_(context),
      refitter_(policy::RefitOptions{.error_threshold = context.config.policy.refit_error_threshold,
                                     .max_age_s = context.config.policy.refit_point_max_age_s}),
      policy_(std::move(policy)),
      reconfigurer_(reconfigurer),
      journal_(journal) {}

void Scheduler::use_refit(const std::string& model, const PerfModel& refit) {
  refitted_[model] = refit;
  oracle_.reset();
}

void Scheduler::reload(ViewContext context) {
  refitter_.set_options({.error_threshold = context.config.policy.refit_error_threshold,
                         .max_age_s = context.config.policy.refit_point_max_age_s});
  context_.emplace(context);
  oracle_.reset();  // its applications hold the models and memory options of before
}

void Scheduler::restore(const std::vector<policy::RefitPoint>& points) {
  for (const policy::RefitPoint& p : points) refitter_.restore(p);
}

policy::PlanOracle& Scheduler::oracle(const std::map<std::string, policy::AppProfile>& apps) {
  std::set<std::string> names;
  for (const auto& [name, app] : apps) names.insert(name);
  if (!oracle_ || names != oracle_apps_) {
    oracle_ = std::make_unique<policy::PlanOracle>(apps, context_->config.memory, context_->config.max_gpus_per_job);
    oracle_->require_uniform_nodes();  // a Morph record holds one gpus_per_node
    oracle_apps_ = std::move(names);
  }
  return *oracle_;
}

// The models that mispredict what their jobs measured are refitted; the view's
// applications and the oracle take the new parameters at once.
void Scheduler::refit(BuiltView& built, RoundReport& report) {
  std::vector<policy::ModelRefit> refits;
  try {
    refits = refitter_.round(built.view, built.apps);
  } catch (const Error& e) {
    report.lines.push_back(fmt::format("online refit failed: {}; the models stay", e.what()));
  }
  report.learned = refitter_.learned();
  for (policy::ModelRefit& r : refits) {
    report.lines.push_back(policy::describe(r));
    if (!r.accepted) continue;
    policy::use_refit(built.apps, r.model, r.perf);
    use_refit(r.model, r.perf);
    report.refits.push_back(std::move(r));
  }
}

namespace {

// A pending job that cannot start whatever it is given (held by its user or an admin,
// waiting for a dependency or its begin time) gets no GPUs that other jobs could use. A
// job morphd itself holds in a requeue is busy, and stays.
void leave_out_blocked(BuiltView& built, const std::set<std::uint32_t>& busy) {
  std::erase_if(built.view.jobs, [&](const policy::JobState& j) {
    const auto t = built.jobs.find(j.id);
    if (t == built.jobs.end() || t->second.blocked.empty() || busy.count(t->second.slurm_id)) return false;
    built.skipped.push_back(fmt::format("job {}: pending on {}: no GPUs until it can start", j.id, t->second.blocked));
    return true;
  });
}

}  // namespace

RoundReport Scheduler::round(const ClusterSnapshot& snapshot, bool dry_run, const JobHistories& histories) {
  RoundReport report;
  // Jobs busy when the snapshot was read are left alone this round even when their
  // reconfiguration finishes now: the snapshot shows them as they were.
  std::set<std::uint32_t> busy = reconfigurer_.busy();
  if (!dry_run) reconfigurer_.advance_all(snapshot.now_s);
  std::set<std::uint32_t> listed;  // the jobs Slurm no longer lists are done with
  for (const SlurmJob& j : snapshot.jobs) listed.insert(j.id);
  journal_.forget_jobs_except(listed);
  ViewContext context = *context_;
  context.refitted = &refitted_;
  BuiltView built = build_view(snapshot, context, histories);
  leave_out_blocked(built, busy);
  for (const std::string& line : caps_.learn(snapshot, built, busy)) report.lines.push_back(line);
  caps_.apply(built);
  report.jobs = static_cast<int>(built.view.jobs.size());
  for (const std::string& s : built.skipped) report.lines.push_back("skipped " + s);
  std::map<std::string, int> epochs;  // of the jobs forecast this round: the others are forgotten
  for (const auto& [id, e] : built.forecasts) {  // once per epoch and job
    epochs[id] = e.epochs;
    if (const auto last = forecast_epochs_.find(id); last != forecast_epochs_.end() && last->second == e.epochs)
      continue;
    const auto [low, high] = std::minmax_element(e.batches.begin(), e.batches.end());
    report.lines.push_back(fmt::format("job {}: adaptive batch after epoch {}: planned for batch {} (forecast {:.0f} to "
                                       "{:.0f} over the next {} adaptation steps)",
                                       id, e.epochs, e.batch, *low, *high, e.batches.size()));
  }
  forecast_epochs_ = std::move(epochs);
  if (built.view.jobs.empty()) return report;
  // Right after slurmctld starts, its nodes are not responding until their slurmd
  // registers again: no node is usable and nothing can be placed. The reconfigurations
  // in flight went on above; the jobs wait for a round with nodes.
  if (built.view.nodes.empty()) {
    report.lines.push_back(fmt::format("no node is usable by Morph: {} left as {} this round",
                                       report.jobs == 1 ? "1 job" : fmt::format("{} jobs", report.jobs),
                                       report.jobs == 1 ? "it is" : "they are"));
    return report;
  }
  // What the policy needs to let a job pay back its last restart (ClusterView::payback_s)
  // and to back off from restarting it again: Slurm counts its requeues only.
  for (policy::JobState& j : built.view.jobs)
    if (const auto tracked = built.jobs.find(j.id); tracked != built.jobs.end()) {
      const Journal::Done done = journal_.done(tracked->second.slurm_id);
      if (done.last_s > 0) j.last_restart_s = done.last_s;
      j.restarts = std::max(j.restarts, done.restarts);
    }
  refit(built, report);
  // A policy that fails decides nothing this round; the refits above, in use already,
  // are reported all the same, so that morphd keeps them.
  try {
    policy::PlanOracle& plans = oracle(built.apps);
    const std::vector<policy::Decision> decisions = policy_->schedule(built.view, plans);
    std::vector<std::string> skipped;
    const std::vector<Reconfiguration> changes = plan_reconfigurations(built, decisions, plans, &skipped);
    for (const std::string& s : skipped) report.lines.push_back("skipped " + s);
    for (const std::uint32_t job : reconfigurer_.busy()) busy.insert(job);
    for (const Reconfiguration& c : changes) {
      if (busy.count(c.job)) continue;  // one reconfiguration at a time
      if (dry_run) report.lines.push_back(fmt::format("job {}: {}", c.job, c.reason));
      else reconfigurer_.start(c, snapshot.now_s);  // it logs the reason
      ++report.started;
    }
    if (!dry_run) record_waits(built, decisions, busy, snapshot.now_s);
  } catch (const Error& e) {
    report.lines.push_back(fmt::format("round failed: {}; the next round tries again", e.what()));
  }
  return report;
}

void Scheduler::record_waits(const BuiltView& built, const std::vector<policy::Decision>& decisions,
                             const std::set<std::uint32_t>& busy, double now_s) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < built.view.jobs.size(); ++i) index.emplace(built.view.jobs[i].id, i);
  const policy::FreeGpus free = policy::free_gpus(built.view, decisions);
  for (const policy::Decision& d : decisions) {
    const auto i = index.find(d.job);
    const auto tracked = built.jobs.find(d.job);
    if (i == index.end() || tracked == built.jobs.end() || busy.count(tracked->second.slurm_id)) continue;
    if (policy::action_of(built.view.jobs[i->second], d.target) != policy::Action::wait) continue;
    DecisionNote note{tracked->second.slurm_id, "wait", {}, {}, now_s, tracked->second.user_id};
    note.alternatives = policy::alternatives(built.view, i->second, d.target, free, *oracle_);
    note.reason = policy::wait_reason(note.alternatives);
    if (journal_.last_reason(note.job) != note.reason) journal_.record_decision(note, tracked->second.admin_comment);
  }
}

}  // namespace morph::daemon
