// morph-profile's pure parts: the size sweep, bus bandwidth and the morph.conf records.
#include <gtest/gtest.h>

#include "libmorph/config/morph_conf.h"
#include "libmorph/util/error.h"
#include "profiler/bus_bandwidth.h"
#include "profiler/conf_fragment.h"
#include "profiler/size_sweep.h"

namespace morph::hw {
namespace {

const char* kConf =
    "GpuType=a100-80g Aliases=a100,a100-sxm MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 "
    "PcieBandwidthGBps=24\n"
    "GpuType=v100 MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=120 PcieBandwidthGBps=12 "
    "Bf16=no\n"
    "NodeType=emu-a100 Gpu=a100-80g Gpus=8 Cpus=32 MemoryGiB=256 NetworkBandwidthGBps=25 Nics=2 Features=a100-80g\n"
    "NodeType=emu-v100 Gpu=v100 Gpus=4 Cpus=16 MemoryGiB=128 NetworkBandwidthGBps=25 HostBandwidthGBps=30\n"
    "NodeName=a100-[1-2] NodeType=emu-a100\n"
    "NodeName=v100-1 NodeType=emu-v100\n";

TEST(SizeSweep, StepsByFourFromMinToMax) {
  EXPECT_EQ(parse_size_sweep("1K:64K"), (std::vector<std::size_t>{1024, 4096, 16384, 65536}));
  EXPECT_EQ(parse_size_sweep("1K:8K"), (std::vector<std::size_t>{1024, 4096, 8192}));
  EXPECT_EQ(parse_size_sweep("64:64"), (std::vector<std::size_t>{64}));
  EXPECT_EQ(parse_size_sweep("1m:1M").front(), 1u << 20);
  EXPECT_EQ(size_label(64u << 20), "64M");
  EXPECT_EQ(size_label(1000), "1000");
}

TEST(SizeSweep, BadSweepsNameTheFlag) {
  for (const char* bad : {"1K", "64M:1K", "x:1M", "1K:8G", "2:1K", "1K:2M:3M"}) {
    try {
      parse_size_sweep(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--sizes"), std::string::npos) << e.what();
    }
  }
}

// MPI counts are ints: a 2G message would be a negative count (MPI_ERR_COUNT) and a 4G one
// a count of 0, timed as 4G.
TEST(SizeSweep, MpiMessagesGoInPartsAnIntHolds) {
  constexpr int kGiB = 1 << 30;
  EXPECT_EQ(mpi_message_parts(1024), (std::vector<int>{1024}));
  EXPECT_EQ(mpi_message_parts(std::size_t{1} << 30), (std::vector<int>{kGiB}));
  EXPECT_EQ(mpi_message_parts(std::size_t{2} << 30), (std::vector<int>{kGiB, kGiB}));
  EXPECT_EQ(mpi_message_parts((std::size_t{3} << 30) + 5), (std::vector<int>{kGiB, kGiB, kGiB, 5}));
  EXPECT_EQ(mpi_message_parts(parse_size_sweep("1K:4G").back()), (std::vector<int>{kGiB, kGiB, kGiB, kGiB}));
}

TEST(BusBandwidth, FollowsNcclTestsConventions) {
  // 1 GB in 1 s on 4 ranks: allreduce busbw = 1 * 2*3/4, all-gather = 1 * 3/4.
  EXPECT_DOUBLE_EQ(busbw_GBps(Collective::allreduce, 1'000'000'000, 1.0, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbw_GBps(Collective::allgather, 1'000'000'000, 1.0, 4), 0.75);
  EXPECT_DOUBLE_EQ(busbw_GBps(Collective::point_to_point, 1'000'000'000, 0.5, 2), 2.0);
  const BandwidthRow row = make_row("MPI", Collective::allreduce, "inter", 2, 4'000'000, 0.001);
  EXPECT_DOUBLE_EQ(row.algbw_GBps, 4.0);
  EXPECT_DOUBLE_EQ(row.busbw_GBps, 4.0);
}

TEST(ConfFragment, MeasuredValuesReplaceConfiguredAndTheRestIsKept) {
  const MorphConfig config = parse_morph_conf(kConf, "morph.conf");
  MeasuredBandwidth m;
  m.inter = MeasuredValue{3.456, "peak MPI allreduce busbw across 2 nodes"};
  m.not_measured_reason = "no CUDA device";
  const std::string text = conf_fragment(config, "morph.conf", {"a100-1", "a100-2"}, m);
  EXPECT_NE(text.find("NetworkBandwidthGBps=3.46"), std::string::npos) << text;
  EXPECT_NE(text.find("# Measured: NetworkBandwidthGBps (B_inter) = peak MPI"), std::string::npos) << text;
  EXPECT_NE(text.find("not measured (no CUDA device): LinkBandwidthGBps (B_intra), PcieBandwidthGBps (B_pcie), Bf16"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("v100"), std::string::npos) << "only the measured nodes' types: " << text;
  // The records parse on their own and carry every configured key.
  const MorphConfig back = parse_morph_conf(text, "fragment");
  const GpuType* gpu = back.cluster.find_gpu_type("a100-sxm");
  ASSERT_NE(gpu, nullptr);
  EXPECT_DOUBLE_EQ(gpu->link_bandwidth_Bps, 230e9);
  EXPECT_DOUBLE_EQ(gpu->pcie_bandwidth_Bps, 24e9);
  EXPECT_DOUBLE_EQ(gpu->memory_bytes, 80.0 * (1u << 30));
  EXPECT_TRUE(gpu->bf16);
  EXPECT_EQ(text.find("Bf16="), std::string::npos) << text;
  const NodeType* node = back.cluster.find_node_type("emu-a100");
  ASSERT_NE(node, nullptr);
  EXPECT_DOUBLE_EQ(node->network_bandwidth_Bps, 3.46e9);
  EXPECT_EQ(node->nics, 2);
  EXPECT_EQ(node->cpus, 32);
  EXPECT_DOUBLE_EQ(node->host_bandwidth_Bps, 8 * 24e9);
  EXPECT_EQ(node->features, (std::vector<std::string>{"a100-80g"}));
}

// The devices' compute capability decides Bf16 over the configured value: 7.0 (V100) no,
// 8.0 (A100) yes, whatever morph.conf said.
TEST(ConfFragment, MeasuredComputeCapabilityDecidesBf16) {
  const MorphConfig config = parse_morph_conf(kConf, "morph.conf");
  MeasuredBandwidth m;
  m.compute_capability = 70;
  std::string text = conf_fragment(config, "morph.conf", {"a100-1"}, m);
  EXPECT_FALSE(parse_morph_conf(text, "fragment").cluster.find_gpu_type("a100-80g")->bf16) << text;
  EXPECT_NE(text.find("# Measured: Bf16 = no (compute capability 7.0; bfloat16 needs 8.0)."), std::string::npos) << text;
  m.compute_capability = 80;
  text = conf_fragment(config, "morph.conf", {"v100-1"}, m);
  EXPECT_TRUE(parse_morph_conf(text, "fragment").cluster.find_gpu_type("v100")->bf16) << text;
  EXPECT_EQ(text.find("Bf16=no"), std::string::npos) << text;
  EXPECT_EQ(text.find("Bf16 (as configured"), std::string::npos) << text;
}

TEST(ConfFragment, MeasuredGpuValuesAndExplicitHostBandwidth) {
  const MorphConfig config = parse_morph_conf(kConf, "morph.conf");
  MeasuredBandwidth m;
  m.intra = MeasuredValue{210.5, "NCCL"};
  m.pcie = MeasuredValue{22.25, "CUDA"};
  const std::string text = conf_fragment(config, "morph.conf", {"v100-1"}, m);
  const MorphConfig back = parse_morph_conf(text, "fragment");
  EXPECT_DOUBLE_EQ(back.cluster.find_gpu_type("v100")->link_bandwidth_Bps, 210.5e9);
  EXPECT_DOUBLE_EQ(back.cluster.find_gpu_type("v100")->pcie_bandwidth_Bps, 22.25e9);
  EXPECT_FALSE(back.cluster.find_gpu_type("v100")->bf16);  // written only when no
  EXPECT_DOUBLE_EQ(back.cluster.find_node_type("emu-v100")->host_bandwidth_Bps, 30e9);  // explicit: kept
  EXPECT_DOUBLE_EQ(back.cluster.find_node_type("emu-v100")->network_bandwidth_Bps, 25e9);
}

// Nodes of two GPU types: B_intra is the first node's and B_pcie and the capability the
// slowest rank's, so neither GpuType takes them; the network is both node types'.
TEST(ConfFragment, NodesOfSeveralGpuTypesKeepTheirGpuValues) {
  const MorphConfig config = parse_morph_conf(kConf, "morph.conf");
  MeasuredBandwidth m;
  m.intra = MeasuredValue{210.5, "NCCL"};
  m.inter = MeasuredValue{11.5, "NCCL"};
  m.pcie = MeasuredValue{11.25, "CUDA"};
  m.compute_capability = 70;
  const std::string text = conf_fragment(config, "morph.conf", {"a100-1", "v100-1"}, m);
  const MorphConfig back = parse_morph_conf(text, "fragment");
  const GpuType* a100 = back.cluster.find_gpu_type("a100-80g");
  ASSERT_NE(a100, nullptr) << text;
  EXPECT_DOUBLE_EQ(a100->link_bandwidth_Bps, 230e9) << text;
  EXPECT_DOUBLE_EQ(a100->pcie_bandwidth_Bps, 24e9) << text;
  EXPECT_TRUE(a100->bf16) << text;
  EXPECT_DOUBLE_EQ(back.cluster.find_gpu_type("v100")->link_bandwidth_Bps, 120e9) << text;
  EXPECT_DOUBLE_EQ(back.cluster.find_node_type("emu-a100")->network_bandwidth_Bps, 11.5e9) << text;
  EXPECT_DOUBLE_EQ(back.cluster.find_node_type("emu-v100")->network_bandwidth_Bps, 11.5e9) << text;
  EXPECT_NE(text.find("the measured nodes have 2 GPU types, a100-80g, v100): LinkBandwidthGBps (B_intra), "
                      "PcieBandwidthGBps (B_pcie), Bf16."),
            std::string::npos)
      << text;
}

TEST(ConfFragment, UnknownNodeIsAnError) {
  const MorphConfig config = parse_morph_conf(kConf, "morph.conf");
  try {
    conf_fragment(config, "/etc/morph.conf", {"a100-1", "gpu-99"}, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu-99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/etc/morph.conf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace morph::hw
