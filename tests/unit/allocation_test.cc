#include "libmorph/cluster/allocation.h"

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

TEST(GpusSpec, SingleNode) {
  const Allocation a = parse_gpus_spec("8xbig", test::test_cluster(), "--gpus");
  ASSERT_EQ(a.nodes.size(), 1u);
  EXPECT_EQ(a.gpus(), 8);
  EXPECT_EQ(a.nodes[0].cpus, 64);  // the whole node's CPUs for all of its GPUs
  EXPECT_EQ(a.to_string(), "8xbig");
}

TEST(GpusSpec, NodesTimesGpusAndAliases) {
  const Allocation a = parse_gpus_spec("2x4xB", test::test_cluster(), "--gpus");
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_EQ(a.gpus(), 8);
  EXPECT_EQ(a.nodes[1].cpus, 32);  // half the node's CPUs for half its GPUs
  EXPECT_EQ(a.min_cpus_per_gpu(), 8);
  EXPECT_EQ(a.to_string(), "2x4xbig");
}

TEST(GpusSpec, HeterogeneousTermsTakeTheWeakestGpu) {
  const Allocation a = parse_gpus_spec("4xbig+4xsmall", test::test_cluster(), "--gpus");
  ASSERT_EQ(a.nodes.size(), 2u);
  EXPECT_EQ(a.nodes[1].node_type.name, "smallnode");
  EXPECT_DOUBLE_EQ(a.min_gpu_memory_bytes(), 32 * test::kGiB);
  EXPECT_DOUBLE_EQ(a.min_gpu_speed(), 0.5);
  EXPECT_EQ(a.max_gpus_on_a_node(), 4);
}

TEST(GpusSpec, CpusPerGpuOverride) {
  const Allocation a = parse_gpus_spec("2xbig", test::test_cluster(), "--gpus", 3);
  EXPECT_EQ(a.cpus(), 6);
  // A big node has 64 CPUs: 8 GPUs at 8 each fill it, at 9 each they would not fit.
  EXPECT_EQ(parse_gpus_spec("8xbig", test::test_cluster(), "--gpus", 8).cpus(), 64);
  try {
    parse_gpus_spec("8xbig", test::test_cluster(), "--gpus", 9);
    FAIL() << "72 CPUs on a 64-CPU node";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("need 72 CPUs; its nodes have 64"), std::string::npos) << e.what();
  }
}

TEST(GpusSpec, RejectsMalformedSpecs) {
  const Cluster c = test::test_cluster();
  for (const char* bad : {"", "8x", "x", "xbig", "0xbig", "9xbig", "5xsmall", "8xnosuch", "2x8x", "8xbig+",
                          "1x2x3xbig", "-1xbig", "99999999999999999999xbig", "0x8xbig"})
    EXPECT_THROW(parse_gpus_spec(bad, c, "--gpus"), Error) << bad;
}

TEST(GpusSpec, ErrorNamesTheFlagAndValue) {
  try {
    parse_gpus_spec("8xnosuch", test::test_cluster(), "--gpus");
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--gpus"), std::string::npos);
    EXPECT_NE(m.find("'nosuch'"), std::string::npos);
    EXPECT_NE(m.find("big"), std::string::npos);  // lists known types
  }
}

}  // namespace
}  // namespace morph
