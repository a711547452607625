#include "daemon/reconfiguration.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "libmorph/util/error.h"

namespace morph::daemon {

Placement placement_of(const policy::ClusterView& view, const policy::JobAllocation& target, double iter_ms) {
  if (target.slices.empty()) throw Error("an empty allocation has no placement");
  const policy::Slice& first = target.slices.front();
  const policy::NodeState& node = view.nodes.at(static_cast<std::size_t>(first.node));
  for (const policy::Slice& s : target.slices) {
    const policy::NodeState& other = view.nodes.at(static_cast<std::size_t>(s.node));
    const bool typed = target.groups.empty() ? other.gpu.name == node.gpu.name
                                             : find_group(target.groups, other.gpu.name) != nullptr;
    if (!typed || s.gpus != first.gpus || s.cpus != first.cpus)
      throw Error(fmt::format("the allocation mixes GPU types or per-node counts ({} x {} on {}, {} x {} on {}); "
                              "a Morph record holds one count per node and its groups' types",
                              first.gpus, node.gpu.name, node.name, s.gpus, other.gpu.name, other.name));
  }
  Placement p;
  p.gpu_type = target.groups.empty() ? node.gpu.name : std::string();
  p.nodes = static_cast<int>(target.slices.size());
  p.gpus_per_node = first.gpus;
  p.cpus_per_gpu = first.gpus > 0 ? std::max(1, first.cpus / first.gpus) : 1;
  p.plan = target.plan;
  p.iter_ms = iter_ms;
  p.groups = target.groups;
  return p;
}

namespace {

// The nodes of `target` that `job` may only stay on (JobState::nodes_kept), by name.
std::string kept_names(const policy::ClusterView& view, const policy::JobState& job,
                       const policy::JobAllocation& target) {
  std::vector<std::string> names;
  for (const policy::Slice& s : target.slices)
    if (job.nodes_kept[static_cast<std::size_t>(s.node)])
      names.push_back(view.nodes.at(static_cast<std::size_t>(s.node)).name);
  return fmt::format("{}", fmt::join(names, ","));
}

}  // namespace

std::vector<Reconfiguration> plan_reconfigurations(const BuiltView& built, const std::vector<policy::Decision>& decisions,
                                                   policy::PlanOracle& oracle, std::vector<std::string>* skipped) {
  std::vector<Reconfiguration> out;
  const policy::FreeGpus free = policy::free_gpus(built.view, decisions);
  for (const policy::Decision& d : decisions) {
    const auto tracked = built.jobs.find(d.job);
    const auto state = std::find_if(built.view.jobs.begin(), built.view.jobs.end(),
                                    [&](const policy::JobState& j) { return j.id == d.job; });
    if (tracked == built.jobs.end() || state == built.view.jobs.end()) continue;
    const auto index = static_cast<std::size_t>(state - built.view.jobs.begin());
    const policy::Action action = policy::action_of(*state, d.target);
    if (action == policy::Action::keep || action == policy::Action::wait) continue;
    Reconfiguration r;
    r.job = tracked->second.slurm_id;
    r.user_uid = tracked->second.user_id;
    r.from_record = tracked->second.admin_comment;
    r.to_record = r.from_record;
    const Placement& was = tracked->second.record.current;
    if (action == policy::Action::preempt) {
      r.path = Path::preempt;
      r.reason = fmt::format("preempt: gives back {}", describe(was));
      r.alternatives = policy::alternatives(built.view, index, d.target, free, oracle);
      out.push_back(std::move(r));
      continue;
    }
    JobRecord next = tracked->second.record;
    try {
      const double iteration_s = oracle.predict_s(*state, d.target.plan, built.view.nodes, d.target.slices, d.target.groups);
      if (!(iteration_s > 0))
        throw Error(fmt::format("the model says plan {} cannot run there", to_string(d.target.plan)));
      next.current = placement_of(built.view, d.target, 1e3 * iteration_s);
    } catch (const Error& e) {
      if (skipped) skipped->push_back(fmt::format("job {}: {}", d.job, e.what()));
      continue;
    }
    if (action == policy::Action::start) {  // already as requested (the prediction aside)
      Placement same = next.current;
      same.iter_ms = was.iter_ms;
      if (same == was) continue;
    }
    // The request a guaranteed job is promised (JobState::requested_plan) is the plan
    // Morph gave it at submission when its user named none: it outlives every replan.
    if (!next.baseline) next.baseline = was;
    r.to_record = to_admin_comment(next);
    const Placement& now = next.current;
    // A pending job starts, even one that was preempted (the policy weighs its wait as a
    // requeue's, start_path()); a running one takes the path the policy weighed, a
    // requeue where its plan needs more host memory per node (within_host_memory()).
    const policy::ChangePath path =
        action == policy::Action::start
            ? policy::ChangePath::start
            : policy::change_path(*state, built.view.nodes, d.target.slices, d.target.plan, oracle);
    // A requeue onto a node the job may only stay on (the policies choose none) would
    // leave it pending until an administrator frees the node: it runs on as it is.
    if (policy::strands(*state, d.target.slices, path)) {
      if (skipped)
        skipped->push_back(fmt::format("job {}: not requeued onto {}, where Slurm would not start it again; it runs on",
                                       d.job, kept_names(built.view, *state, d.target)));
      continue;
    }
    switch (path) {
      case policy::ChangePath::start: r.path = Path::start; break;
      case policy::ChangePath::inplace: r.path = Path::inplace; break;
      case policy::ChangePath::shrink: r.path = Path::shrink; break;
      case policy::ChangePath::requeue: r.path = Path::requeue; break;
    }
    r.reason = fmt::format("{}: {} ({}) -> {} ({}), {:.3f} s/iteration predicted", store::to_string(r.path), describe(was),
                           to_string(was.plan), describe(now), to_string(now.plan), now.iter_ms / 1e3);
    r.alternatives = policy::alternatives(built.view, index, d.target, free, oracle);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace morph::daemon
