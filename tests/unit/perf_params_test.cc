#include "libmorph/perf/perf_params.h"

#include <gtest/gtest.h>

namespace morph {
namespace {

// Values 1..17 in param::Index order.
PerfParams numbered() {
  std::array<double, PerfParams::kCount> v;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  return PerfParams::from_array(v.data());
}

TEST(PerfParams, EveryMemberSitsAtItsIndex) {
  const PerfParams p = numbered();
  EXPECT_EQ(p.k_bwd, param::kBwd + 1);
  EXPECT_EQ(p.k_sync, param::kSync + 1);
  EXPECT_EQ(p.k_opt, param::kOpt + 1);
  EXPECT_EQ(p.k_opt_off, param::kOptOff + 1);
  EXPECT_EQ(p.k_off, param::kOff + 1);
  EXPECT_EQ(p.k_swap, param::kSwap + 1);
  EXPECT_EQ(p.k_const_ms, param::kConst + 1);
  EXPECT_EQ(p.k_dp, param::kDp + 1);
  EXPECT_EQ(p.k_mp, param::kMp + 1);
  EXPECT_EQ(p.k_pcie, param::kPcie + 1);
  EXPECT_EQ(p.k_net, param::kNet + 1);
  EXPECT_EQ(p.k_opt_model, param::kOptModel + 1);
  EXPECT_EQ(p.k_const_off, param::kConstOff + 1);
  EXPECT_EQ(p.k_pipe, param::kPipe + 1);
  EXPECT_EQ(p.k_fwd_mp, param::kFwdMp + 1);
  EXPECT_EQ(p.k_odd_ms, param::kOdd + 1);
  EXPECT_EQ(p.k_stage_ms, param::kStage + 1);
  const auto back = p.to_array();
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], static_cast<double>(i + 1));
}

TEST(PerfParams, InfoAndTextNameEveryParameterInIndexOrder) {
  const auto& info = perf_param_info();
  EXPECT_STREQ(info[param::kBwd].name, "k_bwd");
  EXPECT_STREQ(info[param::kConst].name, "k_const");
  EXPECT_STREQ(info[param::kNet].name, "k_net");
  EXPECT_STREQ(info[param::kFwdMp].name, "k_fwd_mp");
  EXPECT_STREQ(info[param::kStage].name, "k_stage");
  for (const PerfParamInfo& i : info) {
    ASSERT_NE(i.name, nullptr);
    EXPECT_LT(i.lower, i.upper) << i.name;
  }
  EXPECT_EQ(to_string(numbered()),
            "k_bwd=1 k_sync=2 k_opt=3 k_opt_off=4 k_off=5 k_swap=6 k_const=7 k_dp=8 k_mp=9 k_pcie=10 k_net=11 "
            "k_opt_model=12 k_const_off=13 k_pipe=14 k_fwd_mp=15 k_odd=16 k_stage=17");
}

}  // namespace
}  // namespace morph
