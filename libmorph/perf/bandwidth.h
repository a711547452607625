// Bottleneck bandwidths of a plan's communication groups (Morphling A.1: "the lowest
// bandwidth among all pairs of GPUs" of a group).
#pragma once

#include "libmorph/cluster/allocation.h"
#include "libmorph/plan/plan.h"

namespace morph {

struct CommBandwidths {
  double dp_Bps = 0;       // data-parallel group (gradient all-reduce)
  double tp_Bps = 0;       // tensor-parallel group
  double pp_Bps = 0;       // neighbouring pipeline stages
  double offload_Bps = 0;  // GPU <-> host memory for ZeRO-Offload
  bool dp_crosses_nodes = false;
  bool tp_crosses_nodes = false;
  bool pp_crosses_nodes = false;
};

// Ranks are laid out Megatron-style, rank = pp_rank (t d) + dp_rank t + tp_rank, and fill
// the allocation's nodes in order. A group inside one node uses the GPU link (NVLink or
// PCIe); a group across nodes is bound by the slowest node's share of the network. The
// groups of a kind communicate at once, so on each node those that cross nodes share
// the NICs that serve their ranks there (one NIC per gpus/nics GPUs): a group holding m
// of those c ranks gets m/c of that share (docs/models.md, "Iteration time").
CommBandwidths comm_bandwidths(const ExecutionPlan& plan, const Allocation& allocation);

// Network bandwidth a node offers a job that holds `gpus` of its GPUs.
double network_share_Bps(const NodeType& node, int gpus);

}  // namespace morph
