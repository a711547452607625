// The online refit's parameters in the state database (daemon/online_params.h): recorded,
// and taken up again by a restarted morphd.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "daemon/online_params.h"
#include "libmorph/perf/perf_store.h"
#include "tests/unit/test_support.h"

namespace morph::daemon {
namespace {

namespace fs = std::filesystem;

class OnlineParamsTest : public ::testing::Test {
 protected:
  OnlineParamsTest() : catalog_(Catalog::load_file(test::source_dir() + "/share/models.json")) {}
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "morph-params-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db() const { return (dir_ / "morph.db").string(); }

  static policy::ModelRefit refit(const std::string& model, double k_const_ms) {
    policy::ModelRefit r;
    r.model = model;
    r.perf.forward.per_sample_ms = 2;
    r.perf.params.k_const_ms = k_const_ms;
    r.rmsle = 0.01;
    r.accepted = true;
    // What it was fitted on and the prior of that fit, which the next refit keeps.
    MeasuredPoint point;
    point.terms.forward_ms = 10;
    point.iter_ms = 30;
    r.perf.evidence = std::make_shared<const FitEvidence>(FitEvidence{point});
    r.perf.prior.weight = 0.3;
    r.perf.prior.centre.k_const_ms = k_const_ms / 2;
    return r;
  }

  Catalog catalog_;
  fs::path dir_;
};

TEST_F(OnlineParamsTest, TheLatestOnlineRefitOfEachModelIsTakenUpAfterARestart) {
  {
    store::StateStore state = store::StateStore::open(db());
    EXPECT_TRUE(load_online_refits(state, catalog_).empty());
    record_refit(state, refit("gpt2-1.5b", 7), 100);
    record_refit(state, refit("gpt2-1.5b", 9), 200);
    record_refit(state, refit("bert-336m", 3), 150);
    const auto latest = state.latest_params("gpt2-1.5b");
    ASSERT_TRUE(latest);
    EXPECT_EQ(latest->source, "online");
    EXPECT_EQ(latest->fitted_at, 200);
    EXPECT_DOUBLE_EQ(latest->rmsle, 0.01);
  }
  store::StateStore state = store::StateStore::open(db());
  const std::map<std::string, PerfModel> refits = load_online_refits(state, catalog_);
  ASSERT_EQ(refits.size(), 2u);
  EXPECT_DOUBLE_EQ(refits.at("gpt2-1.5b").params.k_const_ms, 9);
  EXPECT_DOUBLE_EQ(refits.at("bert-336m").params.k_const_ms, 3);
  EXPECT_EQ(refits.at("gpt2-1.5b").prior.weight, 0.3);
  EXPECT_DOUBLE_EQ(refits.at("gpt2-1.5b").prior.centre.k_const_ms, 4.5);
  ASSERT_NE(refits.at("gpt2-1.5b").evidence, nullptr);
  EXPECT_EQ(refits.at("gpt2-1.5b").evidence->size(), 1u);
  // A later fit from elsewhere (a profile) is not the online refit: PerfModelDir's model stands.
  PerfModel profiled;
  profiled.forward.per_sample_ms = 1;
  state.record_fitted_params({"bert-336m", perf_model_to_json("bert-336m", profiled), "morph-profile", 300, 0.02});
  EXPECT_EQ(load_online_refits(state, catalog_).count("bert-336m"), 0u);
  EXPECT_EQ(load_online_refits(state, catalog_).count("gpt2-1.5b"), 1u);
}

}  // namespace
}  // namespace morph::daemon
