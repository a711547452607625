#include "libmorph/launch/precision.h"

#include <gtest/gtest.h>

namespace morph::launch {
namespace {

Cluster two_types() {
  Cluster c;
  GpuType a100;
  a100.name = "a100";
  GpuType v100;
  v100.name = "v100";
  v100.aliases = {"v100-32g"};
  v100.bf16 = false;
  c.add_gpu_type(a100);
  c.add_gpu_type(v100);
  return c;
}

Placement on(const std::string& type) {
  Placement p;
  p.gpu_type = type;
  return p;
}

TEST(Precision, Bf16OnlyWhereEveryGpuTypeOfThePlacementHasIt) {
  const Cluster c = two_types();
  EXPECT_TRUE(computes_in_bf16(c, on("a100")));
  EXPECT_FALSE(computes_in_bf16(c, on("v100")));
  EXPECT_FALSE(computes_in_bf16(c, on("v100-32g")));  // by an alias
  Placement both;
  both.groups = {GpuGroup{"a100", 1, 1, 3}, GpuGroup{"v100", 1, 1, 1}};
  EXPECT_FALSE(computes_in_bf16(c, both));
  both.groups[1].gpu_type = "a100";
  EXPECT_TRUE(computes_in_bf16(c, both));
  // A type the cluster does not define, or none at all (a plan on hosts outside morph.conf).
  EXPECT_TRUE(computes_in_bf16(c, on("h100")));
  EXPECT_TRUE(computes_in_bf16(c, on("")));
}

}  // namespace
}  // namespace morph::launch
