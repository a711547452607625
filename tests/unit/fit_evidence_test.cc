#include "libmorph/perf/fit_evidence.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

// Every member set, to values no default has.
MeasuredPoint full_point() {
  MeasuredPoint p;
  IterationTerms& x = p.terms;
  x.forward_ms = 41.5;
  x.unpipelined_forward_ms = 55.25;
  x.model_parallel = true;
  x.ga_steps = 3;
  x.checkpointing = true;
  x.dp_ms = 7.5;
  x.tp_ms = 2.25;
  x.pp_ms = 1.125;
  x.gather_ms = 3.75;
  x.tail_share = 0.4;
  x.dp_net = true;
  x.tp_net = true;
  x.pp_net = true;
  x.odd_ring = 1.5;
  x.stage_passes = 7;
  x.offload = true;
  x.opt_mparams = 21;
  x.opt_off_mparams_per_cpu = 5.25;
  x.model_mparams = 84;
  x.off_ms = 9.5;
  p.iter_ms = 230;
  p.backward_sync_ms = 120;
  p.optimizer_ms = 60;
  p.label = "ga,233";
  return p;
}

PerfModel model_with(FitEvidence evidence) {
  PerfModel perf{ForwardModel{2, 3, 1}, PerfParams{}};
  perf.evidence = std::make_shared<const FitEvidence>(std::move(evidence));
  return perf;
}

TEST(FitEvidence, EveryTermSurvivesTheModelsJson) {
  MeasuredPoint b = full_point();
  b.terms.offload = false;
  b.terms.ga_steps = 1;
  const PerfModel saved = model_with({full_point(), b});
  std::string name;
  const PerfModel loaded = perf_model_from_json(perf_model_to_json("gpt2-1.5b", saved), "test", &name);
  ASSERT_NE(loaded.evidence, nullptr);
  ASSERT_EQ(loaded.evidence->size(), 2u);
  const MeasuredPoint& a = loaded.evidence->front();
  const MeasuredPoint want = full_point();
  EXPECT_EQ(a.label, want.label);
  EXPECT_EQ(a.iter_ms, want.iter_ms);
  EXPECT_EQ(a.backward_sync_ms, want.backward_sync_ms);
  EXPECT_EQ(a.optimizer_ms, want.optimizer_ms);
  // The JSON of the loaded terms is the saved one, member by member, and so is every
  // prediction made from them.
  EXPECT_EQ(evidence_to_json(*loaded.evidence), evidence_to_json(*saved.evidence));
  PerfParams k;
  k.k_odd_ms = 30;
  k.k_net = 2;
  k.k_pipe = 0.5;
  k.k_fwd_mp = 1.3;
  k.k_stage_ms = 4;
  for (std::size_t i = 0; i < 2; ++i) {
    const auto before = predict_iteration((*saved.evidence)[i].terms, k);
    const auto after = predict_iteration((*loaded.evidence)[i].terms, k);
    EXPECT_EQ(after.iter_ms, before.iter_ms) << "point " << i;
    EXPECT_EQ(after.oo_ms, before.oo_ms) << "point " << i;
  }
  EXPECT_EQ((*loaded.evidence)[1].terms.offload, false);
  EXPECT_EQ((*loaded.evidence)[1].terms.ga_steps, 1);
}

TEST(FitEvidence, AModelWithoutEvidenceLoadsWithNone) {
  const PerfModel bare{ForwardModel{2, 3, 1}, PerfParams{}};
  const std::string json = perf_model_to_json("bert-336m", bare);
  EXPECT_EQ(json.find("evidence"), std::string::npos);
  EXPECT_EQ(perf_model_from_json(json, "test", nullptr).evidence, nullptr);
  // Nor does an empty evidence list get written.
  EXPECT_EQ(perf_model_to_json("bert-336m", model_with({})).find("evidence"), std::string::npos);
}

// The sequence length a model was fitted at is saved, and PerfModelDir's model is scaled
// to a job's: a model fitted at 2048 tokens predicts a 4096-token job by its FLOPs. A file
// saved before the field loads as it was, used at any length.
TEST(PerfStore, AModelFittedAtOneSequenceLengthIsScaledToAJobsOther) {
  PerfModel saved = model_with({});
  saved.forward = ForwardModel{1.0, 4.0, 1.0, 2048};
  const std::string text = perf_model_to_json("llama2-7b", saved);
  EXPECT_EQ(perf_model_from_json(text, "test", nullptr).forward.seq_len, 2048);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("morph-perf-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "llama2-7b.json") << text;
  const PerfStore store = PerfStore::load_dir(dir.string());
  const Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  const ModelSpec& llama = *catalog.find("llama2-7b");
  const GpuType gpu{"g", {}, 80, 1.0, 312, IntraLink::nvlink, 1, 1};
  EXPECT_DOUBLE_EQ(store.model_for(llama, 2048, gpu, 0.4).forward.per_sample_ms, 4.0);
  EXPECT_DOUBLE_EQ(store.model_for(llama, 4096, gpu, 0.4).forward.per_sample_ms,
                   4.0 * forward_flops_per_sample(llama, 4096) / forward_flops_per_sample(llama, 2048));
  EXPECT_GT(store.model_for(llama, 4096, gpu, 0.4).forward.per_sample_ms, 8.0);  // attention grows faster than s
  nlohmann::json old = nlohmann::json::parse(text);
  old["forward"].erase("seq_len");
  std::ofstream(dir / "llama2-7b.json") << old.dump();
  EXPECT_DOUBLE_EQ(PerfStore::load_dir(dir.string()).model_for(llama, 4096, gpu, 0.4).forward.per_sample_ms, 4.0);
  old["forward"]["seq_len"] = 0;
  EXPECT_THROW(perf_model_from_json(old.dump(), "m.json", nullptr), Error);
  // A second file of the same model (a backup copy): which would win is the folder's order.
  std::ofstream(dir / "llama2-7b-old.json") << text;
  try {
    PerfStore::load_dir(dir.string());
    ADD_FAILURE() << "two files of one model were loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama2-7b-old.json and " + (dir / "llama2-7b.json").string() +
                                         " both fit model llama2-7b"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A forward time of 1e308 ms passed "must be positive" and made predictions infinite, and
// then NaN (inf - inf) where they were compared.
TEST(PerfStore, AForwardModelPastAnyRealOneIsRefusedNamingItsFields) {
  PerfModel saved = model_with({});
  saved.forward = ForwardModel{1.0, 4.0, 1.0, 2048};
  for (const char* field : {"intercept_ms", "per_sample_ms", "reference_speed"}) {
    nlohmann::json j = nlohmann::json::parse(perf_model_to_json("llama2-7b", saved));
    j["forward"][field] = 1e308;
    try {
      perf_model_from_json(j.dump(), "m.json", nullptr);
      ADD_FAILURE() << field << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("m.json: forward: intercept_ms"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(perf_model_from_json(perf_model_to_json("llama2-7b", saved), "m.json", nullptr));
}

TEST(FitEvidence, BadPointsAreNamed) {
  const nlohmann::json good = evidence_to_json({full_point()});
  auto message = [&](auto&& edit) {
    nlohmann::json j = good;
    edit(j);
    try {
      evidence_from_json(j, "m.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([](nlohmann::json& j) { j[0]["terms"].erase("dp_ms"); }).find("evidence point 1: dp_ms"),
            std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j[0]["terms"]["tp_ms"] = -1; }).find("tp_ms=-1"), std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j[0]["terms"]["pp_net"] = 1; }).find("pp_net"), std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j[0]["terms"]["ga_steps"] = 1.5; }).find("ga_steps"), std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j[0]["terms"]["tail_share"] = 2; }).find("tail_share"),
            std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j[0]["iter_ms"] = 0; }).find("iter_ms"), std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j[0].erase("terms"); }).find("terms"), std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j = nlohmann::json::object(); }).find("array"), std::string::npos);
  EXPECT_EQ(message([](nlohmann::json&) {}), "no error");
}

TEST(FitEvidence, EvidenceSavedBeforeTheStageCostLoadsWithoutIt) {
  nlohmann::json j = evidence_to_json({full_point()});
  j[0]["terms"].erase("stage_passes");
  const FitEvidence loaded = evidence_from_json(j, "m.json");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].terms.stage_passes, 0);  // the model that saved it had no k_stage
  EXPECT_EQ(loaded[0].terms.pp_ms, full_point().terms.pp_ms);
  // Any other term missing is still an error.
  j[0]["terms"].erase("odd_ring");
  EXPECT_THROW(evidence_from_json(j, "m.json"), Error);
}

TEST(FitEvidence, TheFitsPriorSurvivesTheModelsJson) {
  PerfModel saved = model_with({full_point()});
  saved.prior.weight = 0.3;
  saved.prior.centre.k_net = 2.5;
  saved.prior.centre.k_odd_ms = 40;
  const PerfModel loaded = perf_model_from_json(perf_model_to_json("gpt2-1.5b", saved), "test", nullptr);
  EXPECT_EQ(loaded.prior.weight, 0.3);
  EXPECT_EQ(loaded.prior.centre.to_array(), saved.prior.centre.to_array());
  // A fit without a prior (a profile's) writes none and loads with weight 0.
  const std::string bare = perf_model_to_json("gpt2-1.5b", model_with({full_point()}));
  EXPECT_EQ(bare.find("\"prior\""), std::string::npos);
  EXPECT_EQ(perf_model_from_json(bare, "test", nullptr).prior.weight, 0);
  // A refit of parameters saved without their points keeps its prior all the same.
  saved.evidence = nullptr;
  const std::string text = perf_model_to_json("gpt2-1.5b", saved);
  EXPECT_EQ(text.find("\"evidence\""), std::string::npos);
  const PerfModel no_evidence = perf_model_from_json(text, "test", nullptr);
  EXPECT_EQ(no_evidence.evidence, nullptr);
  EXPECT_EQ(no_evidence.prior.weight, 0.3);
  EXPECT_EQ(no_evidence.prior.centre.to_array(), saved.prior.centre.to_array());
}

TEST(FitEvidence, ABadPriorIsNamed) {
  PerfModel saved = model_with({full_point()});
  saved.prior.weight = 0.3;
  const nlohmann::json good = nlohmann::json::parse(perf_model_to_json("m", saved));
  auto message = [&](auto&& edit) {
    nlohmann::json j = good;
    edit(j);
    try {
      perf_model_from_json(j.dump(), "m.json", nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([](nlohmann::json& j) { j["prior"]["weight"] = 0; }).find("m.json: prior: weight 0"),
            std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j["prior"]["centre"]["k_net"] = -1; }).find("prior: centre: k_net=-1"),
            std::string::npos);
  EXPECT_NE(message([](nlohmann::json& j) { j["prior"].erase("centre"); }).find("malformed"), std::string::npos);
  EXPECT_EQ(message([](nlohmann::json&) {}), "no error");
}

}  // namespace
}  // namespace morph
