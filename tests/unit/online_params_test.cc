// The online refit in the state database (daemon/online_params.h): its parameters and its
// points recorded, and taken up again by a restarted morphd.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "daemon/online_params.h"
#include "libmorph/perf/iteration_time.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/util/error.h"
#include "tests/unit/daemon_support.h"
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

// A round's refit that the database could not store (full, busy: here, read-only) is kept
// and stored with a later round, stamped with its own time; it used to be lost at
// morphd's next restart.
TEST_F(OnlineParamsTest, ARefitTheDatabaseCouldNotStoreIsStoredLater) {
  store::StateStore::open(db());  // created
  RefitRecorder recorder;
  recorder.add({}, {}, 50);  // nothing learned: nothing kept
  EXPECT_EQ(recorder.rounds(), 0u);
  recorder.add({}, {refit("gpt2-1.5b", 7)}, 100);
  {
    store::StateStore read_only = store::StateStore::open_read_only(db());
    EXPECT_THROW(recorder.store(read_only, 0), Error);
  }
  EXPECT_EQ(recorder.rounds(), 1u);
  recorder.add({}, {refit("gpt2-1.5b", 9), refit("bert-336m", 3)}, 200);
  store::StateStore state = store::StateStore::open(db());
  EXPECT_FALSE(state.latest_params("gpt2-1.5b"));
  recorder.store(state, 0);
  EXPECT_EQ(recorder.rounds(), 0u);
  ASSERT_EQ(state.params_history("gpt2-1.5b").size(), 2u);
  EXPECT_EQ(state.params_history("gpt2-1.5b")[0].fitted_at, 100);
  EXPECT_EQ(state.latest_params("gpt2-1.5b")->fitted_at, 200);
  EXPECT_DOUBLE_EQ(load_online_refits(state, catalog_).at("gpt2-1.5b").params.k_const_ms, 9);
  EXPECT_EQ(load_online_refits(state, catalog_).count("bert-336m"), 1u);
  recorder.store(state, 0);  // stored once
  EXPECT_EQ(state.params_history("gpt2-1.5b").size(), 2u);
}

// What the refitter learned comes back from the database as it was: the same
// configurations, times, forward models and iteration terms, on a node a job of others
// shares as on a whole one (the model's node type is the node's own; points recorded
// before named the share, "emu-a100~6", and still load). Points that this catalog or
// morph.conf no longer describe are left out, each with a line that names its job and why.
class RefitPointsTest : public test::DaemonFixture {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "morph-points-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RefitPointsTest, WhatTheRefitterLearnedComesBackAsItWas) {
  const ExecutionPlan eight = test::make_plan(8, 1, 1, 1, 1, 2);
  const ExecutionPlan four = test::make_plan(4, 1, 1, 1, 1, 4);
  ClusterSnapshot s =
      snapshot({test::running_job(11, "a100-1", eight, 200), test::running_job(12, "a100-2", four, 200)});
  s.nodes[1].gpus_in_use += 2;  // another job's, not Morph's
  JobHistories h;
  test::report(h[11], 11, 300, eight, 0.5, 5);
  test::report(h[12], 12, 300, four, 0.75, 5);
  const BuiltView built = build_view(s, context_, h);
  policy::ModelRefitter refitter(policy::RefitOptions{.error_threshold = 0.10});
  refitter.round(built.view, built.apps);
  const std::vector<policy::RefitPoint> learned = refitter.learned();
  ASSERT_EQ(learned.size(), 2u);
  EXPECT_EQ(learned[1].allocation.nodes[0].node_type.name, "emu-a100");
  EXPECT_EQ(learned[1].allocation.nodes[0].node_type.gpus, 8) << "a whole node's hardware beside another job";

  const std::string path = (dir_ / "morph.db").string();
  record_refit_points(*std::make_unique<store::StateStore>(store::StateStore::open(path)), learned, 1000, 0);
  const store::StateStore state = store::StateStore::open(path);
  std::vector<std::string> skipped;
  const std::vector<policy::RefitPoint> loaded = load_refit_points(state, context_, &skipped);
  EXPECT_TRUE(skipped.empty());
  ASSERT_EQ(loaded.size(), learned.size());
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    const policy::RefitPoint& a = learned[i];
    const policy::RefitPoint& b = loaded[i];
    EXPECT_EQ(policy::configuration_key(b), policy::configuration_key(a));
    EXPECT_EQ(b.model, a.model);
    EXPECT_EQ(b.app, a.app);
    EXPECT_EQ(b.job, a.job);
    EXPECT_EQ(b.plan, a.plan);
    EXPECT_DOUBLE_EQ(b.iteration_s, a.iteration_s);
    EXPECT_DOUBLE_EQ(b.measured_at_s, 1000);  // when it was recorded: RefitPointMaxAgeDays counts from it
    EXPECT_EQ(b.workload.model.name, a.workload.model.name);
    EXPECT_EQ(b.workload.global_batch, a.workload.global_batch);
    EXPECT_EQ(b.workload.seq_len, a.workload.seq_len);
    EXPECT_DOUBLE_EQ(b.forward.per_sample_ms, a.forward.per_sample_ms);
    ASSERT_EQ(b.allocation.nodes.size(), a.allocation.nodes.size());
    EXPECT_EQ(b.allocation.nodes[0].node, a.allocation.nodes[0].node);
    EXPECT_EQ(b.allocation.nodes[0].node_type.name, a.allocation.nodes[0].node_type.name);
    EXPECT_EQ(b.allocation.nodes[0].node_type.gpus, a.allocation.nodes[0].node_type.gpus);
    EXPECT_EQ(b.allocation.nodes[0].cpus, a.allocation.nodes[0].cpus);
    const PerfParams params;
    EXPECT_DOUBLE_EQ(predict_iteration(iteration_terms(b.workload, b.plan, b.allocation, b.forward), params).iter_ms,
                     predict_iteration(iteration_terms(a.workload, a.plan, a.allocation, a.forward), params).iter_ms);
  }

  // Rows this morph.conf or catalog cannot read: each left out with its job named.
  auto row = [&](const std::string& job, const std::string& model, const std::string& plan,
                 const std::string& allocation) {
    return store::RefitPointRow{model, "x", "c" + job, job, 16, 1024, plan, allocation, 1, 2000};
  };
  const std::string node = R"([{"node":"a100-1","node_type":"emu-a100","gpus":8,"cpus":32}])";
  store::StateStore writer = store::StateStore::open(path);
  writer.record_refit_points(
      std::vector<store::RefitPointRow>{
          row("21", "no-such-model", to_string(eight), node),
          row("22", "gpt2-1.5b", to_string(eight), R"([{"node":"h","node_type":"emu-h100","gpus":8,"cpus":32}])"),
          row("23", "gpt2-1.5b", to_string(eight), R"([{"node":"h","node_type":"emu-a100~9","gpus":8,"cpus":32}])"),
          row("24", "gpt2-1.5b", to_string(four), node),
          row("25", "gpt2-1.5b", to_string(eight), "{"),
          row("26", "gpt2-1.5b", "dp=banana", node),
          row("27", "gpt2-1.5b", to_string(four),
              R"([{"node":"a100-2","node_type":"emu-a100~6","gpus":4,"cpus":16}])")},
      16);
  skipped.clear();
  const std::vector<policy::RefitPoint> again = load_refit_points(writer, context_, &skipped);
  ASSERT_EQ(again.size(), 3u) << ::testing::PrintToString(skipped);
  EXPECT_EQ(again.back().job, "27");
  EXPECT_EQ(again.back().allocation.nodes[0].node_type.name, "emu-a100~6");
  EXPECT_EQ(again.back().allocation.nodes[0].node_type.gpus, 6);
  ASSERT_EQ(skipped.size(), 6u);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "refit point of job 21", skipped[0]);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "no-such-model", skipped[0]);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "node type emu-h100 is not one of morph.conf", skipped[1]);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "node type emu-a100~9 is not one of morph.conf", skipped[2]);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "its allocation holds 8 GPUs, its plan uses 4", skipped[3]);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "not a JSON array", skipped[4]);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "refit point of job 26", skipped[5]);

  // With a maximum age, recording deletes what was recorded longer ago: the two points
  // of 1000 go at 1000 + 1500 with 1000 s, those of 2000 stay.
  record_refit_points(writer, {}, 2500, 1000);
  EXPECT_EQ(writer.refit_points().size(), 7u);
  record_refit_points(writer, std::vector<policy::RefitPoint>{learned[0]}, 2500, 1000);
  const std::vector<store::RefitPointRow> kept = writer.refit_points();
  ASSERT_EQ(kept.size(), 8u);  // learned[0], recorded again at 2500, beside the seven of 2000
  EXPECT_EQ(kept.back().job, learned[0].job);
  EXPECT_DOUBLE_EQ(kept.back().recorded_at, 2500);
}

}  // namespace
}  // namespace morph::daemon
