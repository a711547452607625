#include "libmorph/policy/free_cells.h"

#include <algorithm>
#include <map>
#include <utility>

namespace morph::policy {

FreeCells::FreeCells(const ClusterView& view, const NodePool& pool) {
  for (const JobState& j : view.jobs) {
    // Where it may take GPUs: not on nodes it may only stay on (a growth is a requeue).
    const std::vector<bool> reach = nodes_startable(j);
    if (reach.empty()) {
      restriction_.push_back(-1);
      continue;
    }
    auto m = std::find(masks_.begin(), masks_.end(), reach);
    if (m == masks_.end()) m = masks_.insert(masks_.end(), reach);
    restriction_.push_back(static_cast<int>(m - masks_.begin()));
  }
  // A node's cell: its GPU type and the masks that hold it.
  std::map<std::pair<int, std::vector<bool>>, int> index;
  std::vector<int> demand;  // per cell: the masks that reach it
  for (std::size_t n = 0; n < view.nodes.size(); ++n) {
    std::vector<bool> in(masks_.size());
    for (std::size_t m = 0; m < masks_.size(); ++m) in[m] = n < masks_[m].size() && masks_[m][n];
    const int type = pool.type_of(static_cast<int>(n));
    auto [it, added] = index.try_emplace({type, in}, cells());
    if (added) {
      type_.push_back(type);
      capacity_.push_back(0);
      demand.push_back(static_cast<int>(std::count(in.begin(), in.end(), true)));
      reached_by_.push_back(in);
    }
    capacity_[static_cast<std::size_t>(it->second)] += view.nodes[n].type.gpus;
    cell_of_node_.push_back(it->second);
  }
  for (int r = -1; r < static_cast<int>(masks_.size()); ++r) {
    auto& by_type = orders_.emplace_back(static_cast<std::size_t>(pool.types()));
    for (int c = 0; c < cells(); ++c)
      if (r < 0 || reached_by_[static_cast<std::size_t>(c)][static_cast<std::size_t>(r)])
        by_type[static_cast<std::size_t>(type_of(c))].push_back(c);
    for (std::vector<int>& cells_of_type : by_type)
      std::stable_sort(cells_of_type.begin(), cells_of_type.end(), [&](int a, int b) {
        return demand[static_cast<std::size_t>(a)] < demand[static_cast<std::size_t>(b)];
      });
  }
}

bool FreeCells::reaches(std::size_t job, int cell) const {
  const int m = restriction_[job];
  return m < 0 || reached_by_[static_cast<std::size_t>(cell)][static_cast<std::size_t>(m)];
}

}  // namespace morph::policy
