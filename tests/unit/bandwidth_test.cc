#include "libmorph/perf/bandwidth.h"

#include <gtest/gtest.h>

#include "libmorph/perf/overlap.h"
#include "test_support.h"

namespace morph {
namespace {

using test::make_plan;

TEST(Overlap, SumAtOneMaxAtInfinity) {
  EXPECT_DOUBLE_EQ(overlap(20.0, 3.0, 1.0), 23.0);
  EXPECT_DOUBLE_EQ(overlap(3.0, 4.0, 2.0), 5.0);
  EXPECT_NEAR(overlap(20.0, 3.0, 200.0), 20.0, 1e-6);
  EXPECT_DOUBLE_EQ(overlap(20.0, 3.0, 2.5), overlap(3.0, 20.0, 2.5));
  EXPECT_DOUBLE_EQ(overlap(0.0, 7.0, 3.0), 7.0);
  EXPECT_DOUBLE_EQ(overlap(7.0, 0.0, 3.0), 7.0);
}

TEST(NetworkShare, NicsServingTheJobsGpus) {
  const NodeType node{"n", "big", 8, 64, 0, 40e9, 4, 20e9, {}};
  EXPECT_DOUBLE_EQ(network_share_Bps(node, 1), 10e9);  // one NIC of four
  EXPECT_DOUBLE_EQ(network_share_Bps(node, 2), 10e9);
  EXPECT_DOUBLE_EQ(network_share_Bps(node, 3), 20e9);
  EXPECT_DOUBLE_EQ(network_share_Bps(node, 8), 40e9);
}

TEST(CommBandwidths, InsideOneNodeUsesTheGpuLink) {
  const Allocation a = parse_gpus_spec("8xbig", test::test_cluster(), "--gpus");
  const CommBandwidths bw = comm_bandwidths(make_plan(2, 2, 2), a);
  EXPECT_DOUBLE_EQ(bw.dp_Bps, 100e9);
  EXPECT_DOUBLE_EQ(bw.tp_Bps, 100e9);
  EXPECT_DOUBLE_EQ(bw.pp_Bps, 100e9);
  EXPECT_FALSE(bw.dp_crosses_nodes);
  // Offload: min(PCIe 10 GB/s, host 20 GB/s shared by 8 GPUs).
  EXPECT_DOUBLE_EQ(bw.offload_Bps, 2.5e9);
}

TEST(CommBandwidths, AcrossNodesTheSlowestNodeShareBinds) {
  const Allocation a = parse_gpus_spec("1x4xbig+1x2xbig", test::test_cluster(), "--gpus");
  // dp=6: one DP group over both nodes; the 2-GPU node has one NIC (10 GB/s).
  const CommBandwidths dp = comm_bandwidths(make_plan(6, 1, 1), a);
  EXPECT_TRUE(dp.dp_crosses_nodes);
  EXPECT_DOUBLE_EQ(dp.dp_Bps, 10e9);
  // tp=2 dp=3: TP pairs stay in a node; DP groups (stride 2) cross nodes.
  const CommBandwidths tp = comm_bandwidths(make_plan(3, 2, 1), a);
  EXPECT_FALSE(tp.tp_crosses_nodes);
  EXPECT_DOUBLE_EQ(tp.tp_Bps, 100e9);
  EXPECT_TRUE(tp.dp_crosses_nodes);
}

TEST(CommBandwidths, PipelineAcrossNodesAndTensorSplitByANodeBoundary) {
  const Allocation a = parse_gpus_spec("2x4xbig", test::test_cluster(), "--gpus");
  // pp=2 dp=4: stage 0 on node 0, stage 1 on node 1; DP groups stay inside a node.
  const CommBandwidths pp = comm_bandwidths(make_plan(4, 1, 2), a);
  EXPECT_TRUE(pp.pp_crosses_nodes);
  EXPECT_FALSE(pp.dp_crosses_nodes);
  // Four chains cross at once, one rank each per node: their 4 GPUs use 2 of the 4
  // NICs (20 GB/s), a quarter each.
  EXPECT_DOUBLE_EQ(pp.pp_Bps, 5e9);
  const Allocation uneven = parse_gpus_spec("1x3xbig+1x1xbig", test::test_cluster(), "--gpus");
  EXPECT_TRUE(comm_bandwidths(make_plan(2, 2, 1), uneven).tp_crosses_nodes);
}

TEST(CommBandwidths, GroupsAcrossNodesShareTheNicsOfTheirRanks) {
  const Allocation a = parse_gpus_spec("2x8xbig", test::test_cluster(), "--gpus");
  // One DP group of 16: all 4 NICs of each node (40 GB/s).
  EXPECT_DOUBLE_EQ(comm_bandwidths(make_plan(16, 1, 1), a).dp_Bps, 40e9);
  // tp=2 dp=8: two DP groups of 4 ranks per node share the 4 NICs, half each.
  EXPECT_DOUBLE_EQ(comm_bandwidths(make_plan(8, 2, 1), a).dp_Bps, 20e9);
  // tp=8 dp=2: eight DP groups of one rank per node, an eighth each.
  EXPECT_DOUBLE_EQ(comm_bandwidths(make_plan(2, 8, 1), a).dp_Bps, 5e9);
  // tp=4 on 6-GPU nodes: only the TP group of ranks 4-7 crosses, with 2 ranks on each
  // node; the groups inside a node take none of its NICs: one NIC (10 GB/s) for it.
  const Allocation six = parse_gpus_spec("2x6xbig", test::test_cluster(), "--gpus");
  const CommBandwidths tp = comm_bandwidths(make_plan(3, 4, 1), six);
  EXPECT_TRUE(tp.tp_crosses_nodes);
  EXPECT_DOUBLE_EQ(tp.tp_Bps, 10e9);
}

}  // namespace
}  // namespace morph
