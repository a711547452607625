#include "daemon/size_caps.h"

#include <algorithm>

#include <fmt/format.h>

namespace morph::daemon {
namespace {

// The fewer of two bounds, 0 meaning none.
int tighter(int a, int b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

}  // namespace

std::vector<std::string> SizeCaps::learn(const ClusterSnapshot& snapshot, const BuiltView& built,
                                         const std::set<std::uint32_t>& busy) {
  std::vector<std::string> lines;
  for (const auto& [id, t] : built.jobs) {
    if (t.phase != JobPhase::pending || t.size_limit == SizeLimit::none || busy.count(t.slurm_id)) continue;
    const Placement& p = t.record.current;
    const bool nodes = t.size_limit == SizeLimit::nodes;
    const int refused = nodes ? p.nodes : p.gpus();
    const int least = nodes ? std::max(1, t.record.min_nodes) : std::max(1, t.record.request.gpus_min);
    SizeCap& cap = caps_[t.slurm_id];
    int& most = nodes ? cap.max_nodes : cap.max_gpus;
    if (refused <= least) {  // no smaller plan: said once
      if (!cap.at_least) lines.push_back(fmt::format("job {}: waits on a limit of its {} at its least {} {}: no smaller "
                                                     "plan of it passes",
                                                     id, nodes ? "nodes" : "GPUs", refused, nodes ? "nodes" : "GPUs"));
      cap.at_least = true;
      continue;
    }
    if (most != 0 && most < refused) continue;  // learnt already
    most = refused - 1;
    lines.push_back(fmt::format("job {}: waits on a limit of its {} (its QOS's or association's {}) at {} GPUs on "
                                "{} node{}: at most {} {}{} from now on",
                                id, nodes ? "nodes" : "GPUs", nodes ? "MaxTRESPerJob" : "MaxTRESPerJob or -PerNode",
                                p.gpus(), p.nodes, p.nodes == 1 ? "" : "s", most, nodes ? "node" : "GPU",
                                most == 1 ? "" : "s"));
  }
  std::set<std::uint32_t> alive;  // a job the view skips this round keeps its cap
  for (const SlurmJob& j : snapshot.jobs)
    if (j.phase != JobPhase::done) alive.insert(j.id);
  std::erase_if(caps_, [&](const auto& c) { return !alive.count(c.first); });
  return lines;
}

void SizeCaps::apply(BuiltView& built) const {
  for (policy::JobState& j : built.view.jobs) {
    const auto t = built.jobs.find(j.id);
    if (t == built.jobs.end()) continue;
    const auto cap = caps_.find(t->second.slurm_id);
    if (cap == caps_.end() || (cap->second.max_gpus == 0 && cap->second.max_nodes == 0)) continue;
    const std::string app = fmt::format("{}:cap{}-{}", j.app, cap->second.max_gpus, cap->second.max_nodes);
    if (!built.apps.count(app)) {
      policy::AppProfile a = built.apps.at(j.app);
      a.max_gpus = tighter(a.max_gpus, cap->second.max_gpus);
      a.max_nodes = tighter(a.max_nodes, cap->second.max_nodes);
      built.apps.emplace(app, std::move(a));
    }
    j.app = app;
  }
}

std::vector<store::SizeCapRow> SizeCaps::rows() const {
  std::vector<store::SizeCapRow> rows;
  for (const auto& [job, cap] : caps_) rows.push_back({job, cap.max_gpus, cap.max_nodes, cap.at_least});
  return rows;
}

void SizeCaps::restore(std::span<const store::SizeCapRow> rows) {
  for (const store::SizeCapRow& r : rows) caps_[r.job_id] = SizeCap{r.max_gpus, r.max_nodes, r.at_least};
}

}  // namespace morph::daemon
