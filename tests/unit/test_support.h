// Shared fixtures for the unit tests: a small hand-made cluster and the paths of the
// source tree and of the shared measured data.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "libmorph/cluster/allocation.h"
#include "libmorph/cluster/cluster.h"
#include "libmorph/plan/plan.h"

namespace morph::test {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// "big": 80 GiB, speed 1, NVLink 100 GB/s, PCIe 10 GB/s; node "bignode": 8 GPUs, 64 CPUs,
// 512 GiB, 40 GB/s over 4 NICs, 20 GB/s host bandwidth.
// "small": 32 GiB, speed 0.5, PCIe link 20 GB/s; node "smallnode": 4 GPUs, 16 CPUs, 128 GiB,
// 10 GB/s over 1 NIC.
inline Cluster test_cluster() {
  Cluster c;
  c.add_gpu_type(GpuType{"big", {"b"}, 80 * kGiB, 1.0, 300, IntraLink::nvlink, 100e9, 10e9});
  c.add_gpu_type(GpuType{"small", {}, 32 * kGiB, 0.5, 100, IntraLink::pcie, 20e9, 10e9});
  c.add_node_type(NodeType{"bignode", "big", 8, 64, 512 * kGiB, 40e9, 4, 20e9, {}});
  c.add_node_type(NodeType{"smallnode", "small", 4, 16, 128 * kGiB, 10e9, 1, 40e9, {}});
  return c;
}

inline ExecutionPlan make_plan(int dp, int tp = 1, int pp = 1, int ga = 1, int mb = 1, int mbs = 1) {
  ExecutionPlan p;
  p.dp = dp;
  p.tp = tp;
  p.pp = pp;
  p.ga_steps = ga;
  p.micro_batches = mb;
  p.micro_batch_size = mbs;
  return p;
}

inline std::string source_dir() {
  if (const char* dir = std::getenv("MORPH_SRCDIR"); dir != nullptr && *dir != '\0') return dir;
  return MORPH_TEST_SRCDIR;
}

// The Morphling artifact (../shared/data/morphling-artifact), or "" when it is absent.
inline std::string artifact_dir() {
  std::string dir;
  if (const char* env = std::getenv("MORPH_ARTIFACT_DIR"); env != nullptr && *env != '\0') dir = env;
  else dir = source_dir() + "/../shared/data/morphling-artifact";
  return std::filesystem::is_directory(dir + "/profile") ? dir : std::string{};
}

#define MORPH_REQUIRE_ARTIFACT(dir)                                                        \
  const std::string dir = ::morph::test::artifact_dir();                                   \
  if (dir.empty()) GTEST_SKIP() << "artifact data not found (set MORPH_ARTIFACT_DIR or put " \
                                   "shared/data beside the source tree)"

}  // namespace morph::test
