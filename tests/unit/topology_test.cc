#include "profiler/topology.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "libmorph/util/text_file.h"
#include "test_support.h"

namespace morph::hw {
namespace {

Topology saved(const std::string& name) { return load_topology(test::source_dir() + "/tests/profiler/" + name); }

TEST(Topology, DgxA100HasEightNvSwitchedGpusOnGen4x16) {
  const Topology t = saved("dgx-a100.xml");
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.pus, 256);
  ASSERT_EQ(t.gpus.size(), 8u);
  EXPECT_EQ(t.nvswitches, 6);
  for (int i = 0; i < 8; ++i) {
    const Gpu& g = t.gpus[static_cast<std::size_t>(i)];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(g.pcie.generation, 4);
    EXPECT_EQ(g.pcie.width, 16);
    EXPECT_NEAR(g.pcie.bandwidth_GBps, 31.5, 0.1);
    EXPECT_EQ(g.numa_node, i < 4 ? 0 : 1);
    EXPECT_EQ(g.cpus.size(), 128u);
    ASSERT_EQ(g.nvlink_peers.size(), 7u) << "GPU" << i;
    for (const NvLinkPeer& p : g.nvlink_peers) {
      EXPECT_NE(p.gpu_index, i);
      EXPECT_TRUE(p.via_nvswitch);
      EXPECT_DOUBLE_EQ(p.bandwidth_GBps, 300);  // 6 switches x 2 links x 25 GB/s
    }
  }
  EXPECT_EQ(t.gpus[0].cpus.front(), 0);
  EXPECT_EQ(t.gpus[4].cpus.front(), 64);
}

// CUDA sees one GPU of eight (CUDA_VISIBLE_DEVICES=3): GPU 3 is cuda0, the others have
// only their NVML devices, and nvml0 is another GPU. Both were numbered 0; NVML's numbers
// hold for every GPU then.
TEST(Topology, GpusNumberedByCudaAndNvmlAtOnceDoNotShareANumber) {
  const Topology whole = saved("dgx-a100.xml");
  std::string xml = read_text_file(test::source_dir() + "/tests/profiler/dgx-a100.xml", "the topology");
  for (int i = 0; i < 8; ++i) {
    const std::string from = fmt::format("name=\"cuda{}\"", i);
    const std::size_t at = xml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    xml.replace(at, from.size(), i == 3 ? "name=\"cuda0\"" : fmt::format("name=\"hidden{}\"", i));
  }
  const std::string path = ::testing::TempDir() + "/one-cuda-gpu.xml";
  {
    std::ofstream out(path);
    out << xml;
  }
  const Topology t = load_topology(path);
  ASSERT_EQ(t.gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(t.gpus[static_cast<std::size_t>(i)].index, i);
    EXPECT_EQ(t.gpus[static_cast<std::size_t>(i)].pci_bus_id, whole.gpus[static_cast<std::size_t>(i)].pci_bus_id) << i;
  }
}

TEST(Topology, DgxA100HcasSitBesideTwoGpusEach) {
  const Topology t = saved("dgx-a100.xml");
  ASSERT_EQ(t.nics.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const Nic& n = t.nics[static_cast<std::size_t>(i)];
    EXPECT_EQ(n.name, "mlx5_" + std::to_string(i));
    EXPECT_EQ(n.kind, NicKind::infiniband);
    EXPECT_EQ(n.gpus_same_switch, (std::vector<int>{2 * i, 2 * i + 1}));
    EXPECT_EQ(n.numa_node, i < 2 ? 0 : 1);
    EXPECT_EQ(n.gpus_same_numa.size(), 4u);
    EXPECT_EQ(n.pcie.generation, 4);
  }
  ASSERT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.numa_nodes[1].cpus.size(), 128u);
}

TEST(Topology, PcieNodeHasNoNvLinkAndAnEthernetNic) {
  const Topology t = saved("pcie-node.xml");
  ASSERT_EQ(t.gpus.size(), 4u);
  EXPECT_EQ(t.nvswitches, 0);
  for (const Gpu& g : t.gpus) {
    EXPECT_TRUE(g.nvlink_peers.empty());
    EXPECT_EQ(g.pcie.generation, 4);
    EXPECT_EQ(g.pcie.width, 16);
    EXPECT_EQ(g.numa_node, 0);
  }
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].kind, NicKind::ethernet);
  EXPECT_EQ(t.nics[0].pcie.generation, 3);
  EXPECT_EQ(t.nics[0].pcie.width, 8);
  EXPECT_TRUE(t.nics[0].gpus_same_switch.empty());
  EXPECT_EQ(t.nics[0].gpus_same_numa, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Topology, GpuLocalityFeedsTheBindingRule) {
  const Topology t = saved("dgx-a100.xml");
  const auto gpus = gpu_locality(t);
  ASSERT_EQ(gpus.size(), 8u);
  std::vector<int> all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<std::size_t>(i)] = i;
  const auto b = launch::bind_ranks(gpus, all, {0, 1, 4});
  EXPECT_EQ(b[0].cpus.size(), 64u);  // GPUs 0 and 1 split NUMA 0's 128 PUs
  EXPECT_EQ(b[0].numa_node, 0);
  EXPECT_EQ(b[2].cpus.size(), 128u);
  EXPECT_EQ(b[2].numa_node, 1);
}

TEST(Topology, ThisMachineLoads) {
  const Topology t = load_topology("");
  EXPECT_EQ(t.source, "this machine");
  EXPECT_GE(t.pus, 1);
  EXPECT_GE(t.numa_nodes.size(), 1u);
}

TEST(Topology, MissingAndBadFilesNameTheFile) {
  try {
    load_topology("/nonexistent/topo.xml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/topo.xml"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_topology(test::source_dir() + "/tests/profiler/make_topologies.py"), Error);
}

TEST(Topology, PcieLinkSpeedGivesGenerationAndWidth) {
  EXPECT_EQ(pcie_link_from_speed(31.5077).generation, 4);
  EXPECT_EQ(pcie_link_from_speed(15.7538).generation, 3);
  EXPECT_EQ(pcie_link_from_speed(15.7538).width, 16);
  EXPECT_EQ(pcie_link_from_speed(7.8769).width, 8);
  EXPECT_EQ(pcie_link_from_speed(7.8769).generation, 3);
  EXPECT_EQ(pcie_link_from_speed(8.0).generation, 2);  // gen2 x16: 8b/10b
  EXPECT_EQ(pcie_link_from_speed(63.0154).generation, 5);
  EXPECT_EQ(pcie_link_from_speed(0).generation, 0);
  EXPECT_EQ(pcie_link_from_speed(3.3).generation, 0);  // matches no generation
}

TEST(Topology, CpuListCompressesRanges) {
  EXPECT_EQ(cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list({}), "");
}

int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) return cpu;
  return 0;
}

// Runs `body` in a child process, so that the test binary keeps its own binding; returns
// the child's exit status.
template <typename Body>
int in_child(Body body) {
  const pid_t child = fork();
  if (child == 0) _exit(body());
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(CpuBinding, ApplyBindingPinsTheProcess) {
  const int cpu = first_allowed_cpu();
  const int status = in_child([cpu] {
    try {
      apply_binding({{cpu}, -1});
    } catch (const Error&) {
      return 3;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1 && CPU_ISSET(cpu, &set) ? 0 : 2;
  });
  EXPECT_EQ(status, 0) << "2: affinity is not {" << cpu << "}; 3: apply_binding threw";
}

// Memory binding needs set_mempolicy, which some container profiles refuse: then the error
// must name the node.
TEST(CpuBinding, ApplyBindingBindsMemoryOrSaysWhyNot) {
  const int cpu = first_allowed_cpu();
  const int status = in_child([cpu] {
    try {
      apply_binding({{cpu}, 0});
    } catch (const Error& e) {
      return std::string(e.what()).find("NUMA node 0") != std::string::npos ? 0 : 2;
    }
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(CpuBinding, ApplyBindingRefusesImpossibleCpus) {
  try {
    apply_binding({{100000}, -1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("100000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace morph::hw
