#include "libmorph/perf/profile_sampling.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

const ModelSpec kLlama{"llama2-7b", 32, 4096, 32, 4096, 32000, 6.7e9};
const ModelSpec kGpt2{"gpt2-1.5b", 48, 1600, 25, 1024, 50257, 1.5e9};  // 25 heads: TP 5 only
const ModelSpec kTiny{"tiny", 4, 16, 4, 8, 52, 2000};                 // the reference trainer's MLP

void expect_valid(const std::vector<ProfileConfig>& configs, const ModelSpec& m, std::int64_t batch,
                  const ProfileAllocation& a) {
  std::set<std::string> seen;
  for (const ProfileConfig& c : configs) {
    SCOPED_TRACE(describe(c));
    EXPECT_EQ(c.plan.gpus(), c.gpus());
    EXPECT_LE(c.nodes, a.nodes);
    EXPECT_LE(c.gpus_per_node, a.gpus_per_node);
    EXPECT_EQ(m.heads % c.plan.tp, 0);
    EXPECT_EQ(c.gpus_per_node % c.plan.tp, 0);  // TP inside a node
    EXPECT_EQ(m.layers % c.plan.pp, 0);
    EXPECT_EQ(batch % c.plan.dp, 0);
    EXPECT_NO_THROW(validate_plan_shape(c.plan, "sample"));
    EXPECT_TRUE(seen.insert(describe(c)).second) << "repeated";
  }
}

long offloading(const std::vector<ProfileConfig>& configs) {
  return std::count_if(configs.begin(), configs.end(), [](const ProfileConfig& c) { return c.plan.offload; });
}

TEST(ProfileSampling, OneNodeOfEightTakesSevenWithThreeOffloadAndTpPp) {
  const ProfileAllocation a{1, 8};
  const auto configs = choose_profile_configs(kLlama, 64, a);
  ASSERT_EQ(configs.size(), 7u);
  EXPECT_EQ(offloading(configs), 3);
  expect_valid(configs, kLlama, 64, a);
  EXPECT_EQ(describe(configs[0]), "dp=8 tp=1 pp=1 zero=2 offload=1 on 1x8");
  EXPECT_EQ(describe(configs[2]), "dp=2 tp=1 pp=1 zero=2 offload=1 on 1x2");
  EXPECT_EQ(describe(configs[5]), "dp=1 tp=8 pp=1 zero=0 offload=0 on 1x8");
  EXPECT_EQ(describe(configs[6]), "dp=4 tp=1 pp=2 zero=0 offload=0 on 1x8");
}

TEST(ProfileSampling, SeveralNodesStartFromTheWholeAllocation) {
  const ProfileAllocation a{4, 8};
  const auto configs = choose_profile_configs(kLlama, 512, a);
  ASSERT_EQ(configs.size(), 7u);
  EXPECT_EQ(offloading(configs), 3);
  expect_valid(configs, kLlama, 512, a);
  EXPECT_EQ(describe(configs[0]), "dp=32 tp=1 pp=1 zero=2 offload=1 on 4x8");
  EXPECT_EQ(describe(configs[1]), "dp=8 tp=1 pp=1 zero=2 offload=1 on 1x8");
}

TEST(ProfileSampling, HeadsLimitTensorParallelism) {
  const ProfileAllocation a{2, 4};
  const auto configs = choose_profile_configs(kGpt2, 128, a);
  EXPECT_EQ(configs.size(), 7u);
  EXPECT_EQ(offloading(configs), 3);
  expect_valid(configs, kGpt2, 128, a);
  for (const ProfileConfig& c : configs) EXPECT_EQ(c.plan.tp, 1) << describe(c);  // 5 does not divide 4
}

TEST(ProfileSampling, AnOddBatchFillsFromWhatDivides) {
  const ProfileAllocation a{1, 8};
  const auto configs = choose_profile_configs(kTiny, 4, a);  // d in {4, 2, 1}
  EXPECT_EQ(configs.size(), 7u);
  expect_valid(configs, kTiny, 4, a);
}

TEST(ProfileSampling, TooSmallAnAllocationIsAClearError) {
  try {
    choose_profile_configs(kLlama, 64, ProfileAllocation{1, 2});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 node(s) x 2 GPUs holds "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at least 7 are needed, 3 of them with ZeRO-Offload"), std::string::npos) << e.what();
  }
  EXPECT_THROW(choose_profile_configs(kLlama, 3, ProfileAllocation{1, 8}), Error);  // only d = 1 divides
  EXPECT_THROW(choose_profile_configs(kLlama, 64, ProfileAllocation{0, 8}), Error);
}

TEST(ProfileSampling, HeldOutConfigurationsAreNewAndValid) {
  const ProfileAllocation a{1, 8};
  const auto chosen = choose_profile_configs(kTiny, 32, a);
  const auto held = held_out_profile_configs(kTiny, 32, a, chosen, 3);
  ASSERT_EQ(held.size(), 3u);
  expect_valid(held, kTiny, 32, a);
  for (const ProfileConfig& h : held)
    for (const ProfileConfig& c : chosen) EXPECT_NE(describe(h), describe(c));
  EXPECT_TRUE(held_out_profile_configs(kTiny, 32, a, chosen, 0).empty());
}

}  // namespace
}  // namespace morph
