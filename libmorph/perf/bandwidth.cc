#include "libmorph/perf/bandwidth.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "libmorph/util/error.h"

namespace morph {
namespace {

struct GroupScan {
  double bandwidth = std::numeric_limits<double>::infinity();
  bool crosses = false;
};

// Scans `groups` groups of `size` ranks, member i of group g being rank
// base(g) + i * stride. The groups of one kind communicate at once, so on a node the
// groups that cross nodes share the NICs of the ranks they hold there: a group with m of
// those c ranks gets m/c of their share (with one group per node, all of it).
template <typename Base>
GroupScan scan_groups(const std::vector<int>& node_of_rank, const Allocation& a, int groups, int size,
                      int stride, Base base) {
  const auto node_of = [&](int g, int i) { return node_of_rank[static_cast<std::size_t>(base(g) + i * stride)]; };
  // Members follow rank order and ranks fill nodes in order: a group crosses nodes when
  // its first and last members do, and its members on one node are consecutive.
  const auto crosses = [&](int g) { return node_of(g, 0) != node_of(g, size - 1); };
  std::vector<int> crossing_ranks(a.nodes.size(), 0);  // per node, ranks of groups across nodes
  for (int g = 0; g < groups; ++g)
    if (crosses(g))
      for (int i = 0; i < size; ++i) ++crossing_ranks[static_cast<std::size_t>(node_of(g, i))];
  GroupScan scan;
  for (int g = 0; g < groups; ++g) {
    if (!crosses(g)) {
      scan.bandwidth = std::min(scan.bandwidth, a.nodes[static_cast<std::size_t>(node_of(g, 0))].gpu.link_bandwidth_Bps);
      continue;
    }
    scan.crosses = true;
    for (int i = 0; i < size;) {
      const int n = node_of(g, i);
      int members = 0;  // of this group on node n
      for (; i < size && node_of(g, i) == n; ++i) ++members;
      const NodeShare& share = a.nodes[static_cast<std::size_t>(n)];
      const int c = crossing_ranks[static_cast<std::size_t>(n)];
      scan.bandwidth = std::min({scan.bandwidth, network_share_Bps(share.node_type, c) * members / c,
                                 share.gpu.link_bandwidth_Bps});
    }
  }
  return scan;
}

}  // namespace

double network_share_Bps(const NodeType& node, int gpus) {
  const int nics = std::max(1, node.nics);
  const int used = std::min(nics, (gpus * nics + node.gpus - 1) / std::max(1, node.gpus));
  return node.network_bandwidth_Bps * std::max(1, used) / nics;
}

CommBandwidths comm_bandwidths(const ExecutionPlan& p, const Allocation& a) {
  const int total = a.gpus();
  if (total != p.gpus()) throw Error("comm_bandwidths: plan and allocation differ in GPU count");
  std::vector<int> node_of_rank;
  node_of_rank.reserve(static_cast<std::size_t>(total));
  for (std::size_t n = 0; n < a.nodes.size(); ++n)
    node_of_rank.insert(node_of_rank.end(), static_cast<std::size_t>(a.nodes[n].gpus), static_cast<int>(n));

  const int d = p.dp, t = p.tp, pp = p.pp;
  // DP group (pp_rank, tp_rank): ranks pp_rank t d + tp_rank + i t.
  const GroupScan dp = scan_groups(node_of_rank, a, pp * t, d, t,
                                   [&](int g) { return (g / t) * t * d + g % t; });
  // TP group (pp_rank, dp_rank): t consecutive ranks.
  const GroupScan tp = scan_groups(node_of_rank, a, pp * d, t, 1, [&](int g) { return g * t; });
  // PP chain (dp_rank, tp_rank): ranks g + i t d.
  const GroupScan pl = scan_groups(node_of_rank, a, d * t, pp, t * d, [&](int g) { return g; });

  CommBandwidths bw;
  bw.dp_Bps = dp.bandwidth;
  bw.tp_Bps = tp.bandwidth;
  bw.pp_Bps = pl.bandwidth;
  bw.dp_crosses_nodes = dp.crosses;
  bw.tp_crosses_nodes = tp.crosses;
  bw.pp_crosses_nodes = pl.crosses;
  // ZeRO-Offload: each GPU's PCIe link, and the host memory shared by the job's GPUs of a node.
  bw.offload_Bps = std::numeric_limits<double>::infinity();
  for (const NodeShare& n : a.nodes)
    bw.offload_Bps = std::min({bw.offload_Bps, n.gpu.pcie_bandwidth_Bps,
                               n.node_type.host_bandwidth_Bps / std::max(1, n.gpus)});
  return bw;
}

}  // namespace morph
