#include "daemon/size_caps.h"

#include <algorithm>

#include <fmt/format.h>

namespace morph::daemon {
namespace {

// The fewer of two bounds, 0 meaning none.
int tighter(int a, int b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

}  // namespace

std::vector<std::string> SizeCaps::learn(const BuiltView& built, const std::set<std::uint32_t>& busy) {
  std::vector<std::string> lines;
  std::set<std::uint32_t> listed;
  for (const auto& [id, t] : built.jobs) {
    listed.insert(t.slurm_id);
    if (t.phase != JobPhase::pending || t.size_limit == SizeLimit::none || busy.count(t.slurm_id)) continue;
    const Placement& p = t.record.current;
    SizeCap& cap = caps_[t.slurm_id];
    const SizeCap was = cap;
    if (t.size_limit == SizeLimit::nodes) cap.max_nodes = tighter(cap.max_nodes, std::max(1, p.nodes - 1));
    else cap.max_gpus = tighter(cap.max_gpus, std::max(1, p.gpus() - 1));
    if (cap.max_gpus == was.max_gpus && cap.max_nodes == was.max_nodes) continue;
    const bool nodes = t.size_limit == SizeLimit::nodes;
    const int most = nodes ? cap.max_nodes : cap.max_gpus;
    lines.push_back(fmt::format("job {}: waits on a limit of its {} (its QOS's or association's MaxTRES, a "
                                "partition's MaxNodes) at {} GPUs on {} node{}: at most {} {}{} from now on",
                                id, nodes ? "nodes" : "GPUs", p.gpus(), p.nodes, p.nodes == 1 ? "" : "s", most,
                                nodes ? "node" : "GPU", most == 1 ? "" : "s"));
  }
  std::erase_if(caps_, [&](const auto& c) { return !listed.count(c.first); });
  return lines;
}

void SizeCaps::apply(BuiltView& built) const {
  for (policy::JobState& j : built.view.jobs) {
    const auto t = built.jobs.find(j.id);
    if (t == built.jobs.end()) continue;
    const auto cap = caps_.find(t->second.slurm_id);
    if (cap == caps_.end()) continue;
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

}  // namespace morph::daemon
