// Which checkpoint a restarted job resumes from (libmorph/launch/checkpoint_choice.h)
// and the metrics line protocol (metrics_line.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "libmorph/launch/checkpoint_choice.h"
#include "libmorph/launch/metrics_line.h"
#include "libmorph/util/error.h"
#include "tests/state_fixture.h"

namespace morph {
namespace {

namespace fs = std::filesystem;

TEST(MetricsLine, ReadsTheProtocolAndRefusesBadLinesNamingTheField) {
  const auto m = launch::parse_metrics_line("12 0.25 512 3.5\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->step, 12u);
  EXPECT_DOUBLE_EQ(m->seconds, 0.25);
  EXPECT_EQ(m->samples, 512u);
  ASSERT_TRUE(m->loss);
  EXPECT_DOUBLE_EQ(*m->loss, 3.5);
  EXPECT_FALSE(launch::parse_metrics_line("13 0.5 512")->loss);
  EXPECT_FALSE(launch::parse_metrics_line("# a comment"));
  EXPECT_FALSE(launch::parse_metrics_line("   "));
  for (const char* bad : {"12", "12 0.25", "x 0.25 512", "12 -1 512", "12 0.25 512 nan", "1 2 3 4 5", "12 0 512"})
    EXPECT_THROW(launch::parse_metrics_line(bad), Error) << bad;
  EXPECT_EQ(launch::format_metrics_record(100.5, *m, "dp=2,tp=1,pp=1,zero=0"),
            "100.500 12 0.25 512 3.5 dp=2,tp=1,pp=1,zero=0");
  // The record read back (morph-profile job): step, seconds, samples and loss.
  const auto back = launch::parse_metrics_record(launch::format_metrics_record(100.5, *m, "dp=2,tp=1,pp=1,zero=0"));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->step, 12u);
  EXPECT_DOUBLE_EQ(back->seconds, 0.25);
  EXPECT_DOUBLE_EQ(*back->loss, 3.5);
  EXPECT_FALSE(launch::parse_metrics_record("100.5 13 0.5 512 - dp=1,tp=1,pp=1,zero=0")->loss);
  EXPECT_FALSE(launch::parse_metrics_record("# 100.5 start"));
  EXPECT_THROW(launch::parse_metrics_record("100.5 13 0.5 512"), Error);
  // What a trainer writes (the Python module's morph.metrics), read back exactly.
  const launch::IterationMetrics written{7, 0.123456789, 64, 1.0 / 3, std::nullopt};
  const std::string line = launch::format_metrics_line(written);
  EXPECT_EQ(line, "7 0.123456789 64 0.33333333333333331");
  EXPECT_DOUBLE_EQ(*launch::parse_metrics_line(line)->loss, 1.0 / 3);
  EXPECT_EQ(launch::format_metrics_line({8, 0.5, 64, std::nullopt, std::nullopt}), "8 0.5 64");
  EXPECT_THROW(launch::format_metrics_line({8, 0, 64, std::nullopt, std::nullopt}), Error);  // no time: morphrun refuses it
}

// Issue 15: the gradient similarity of adaptive batching rides after the loss, and last in
// the job's metrics file, where the first six fields keep their places.
TEST(MetricsLine, CarriesTheGradientSimilarity) {
  const auto m = launch::parse_metrics_line("12 0.25 512 3.5 0.75");
  ASSERT_TRUE(m && m->similarity);
  EXPECT_DOUBLE_EQ(*m->similarity, 0.75);
  EXPECT_DOUBLE_EQ(*m->loss, 3.5);
  EXPECT_FALSE(launch::parse_metrics_line("12 0.25 512 3.5")->similarity);
  for (const char* bad : {"12 0.25 512 3.5 1.5", "12 0.25 512 3.5 -1.01", "12 0.25 512 3.5 x", "1 2 3 4 0.5 6"})
    EXPECT_THROW(launch::parse_metrics_line(bad), Error) << bad;
  const std::string record = launch::format_metrics_record(100.5, *m, "dp=2,tp=1,pp=1,zero=0");
  EXPECT_EQ(record, "100.500 12 0.25 512 3.5 dp=2,tp=1,pp=1,zero=0 0.75");
  const auto back = launch::parse_metrics_record(record);
  ASSERT_TRUE(back && back->similarity);
  EXPECT_DOUBLE_EQ(*back->similarity, 0.75);
  EXPECT_THROW(launch::parse_metrics_record("100.5 13 0.5 512 - dp=1,tp=1,pp=1,zero=0 0.5"), Error);
  EXPECT_EQ(launch::format_metrics_line({7, 0.5, 64, 2.0, -0.25}), "7 0.5 64 2 -0.25");
  EXPECT_THROW(launch::format_metrics_line({7, 0.5, 64, std::nullopt, 0.5}), Error);
}

class CheckpointChoice : public ::testing::Test {
 protected:
  void write(const std::string& name, const state::Layout& layout, std::uint64_t step, const std::string& model = "") {
    nlohmann::json trainer = {{"seed", 1}};
    if (!model.empty()) trainer["morph_model"] = model;
    test::write_synthetic_checkpoint((dir_ / name).string(), test::gpt_spec({}), layout, {step, step * 64}, trainer);
  }
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("morph-choice-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::permissions(dir_ / "step_13", fs::perms::owner_all, ignored);
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(CheckpointChoice, TheNewestCommittedCheckpointAndWhetherItNeedsAReshard) {
  EXPECT_FALSE(launch::choose_checkpoint((dir_ / "none").string(), {2, 1, 1, 0}, ""));
  const state::Layout two{2, 1, 1, 0}, four{4, 1, 1, 0};
  write("step_3", two, 3);
  write("step_5", two, 5);
  write("step_9", two, 9);  // a save that crashed before its commit is never read, even complete
  fs::rename(dir_ / "step_9", dir_ / "step_9.partial");
  std::ofstream(dir_ / "step_9.partial.lock") << "";  // nor is its writer's lock file
  write("step_11", two, 11);
  std::ofstream(dir_ / "step_11" / "index.json") << R"({"format": 1})";  // damaged: skipped, not fatal
  // Nested 100,000 deep (200 KB): it crashed the choice (review of the state code); skipped.
  write("step_15", two, 15);
  {
    nlohmann::json index = nlohmann::json::parse(std::ifstream(dir_ / "step_15" / "index.json"));
    index["trainer"] = {{"seed", "NESTED"}};
    std::string text = index.dump();
    text.replace(text.find("\"NESTED\""), 8, std::string(100000, '[') + std::string(100000, ']'));
    std::ofstream(dir_ / "step_15" / "index.json") << text;
  }
  // Entries that cannot be read are skipped too: a link to itself (stat fails, even as
  // root) and a folder without permissions (for a user).
  fs::create_directory_symlink(dir_ / "step_12", dir_ / "step_12");
  fs::create_directories(dir_ / "step_13");
  fs::permissions(dir_ / "step_13", fs::perms::none);
  auto choice = launch::choose_checkpoint(dir_.string(), two, "");
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->newest, (dir_ / "step_5").string());
  EXPECT_FALSE(choice->needs_reshard);
  EXPECT_EQ(choice->resume, choice->newest);
  choice = launch::choose_checkpoint(dir_.string(), four, "");
  ASSERT_TRUE(choice);
  EXPECT_TRUE(choice->needs_reshard);
  EXPECT_EQ(choice->resume, (dir_ / "step_5.dp4-tp1-pp1-z0").string());
  // Once resharded, the copy in the plan's layout wins at equal progress.
  write("step_5.dp4-tp1-pp1-z0", four, 5);
  choice = launch::choose_checkpoint(dir_.string(), four, "");
  ASSERT_TRUE(choice);
  EXPECT_FALSE(choice->needs_reshard);
  EXPECT_EQ(choice->newest, (dir_ / "step_5.dp4-tp1-pp1-z0").string());
}

TEST_F(CheckpointChoice, AnotherModelsCheckpointOrAnImpossibleLayoutIsRefused) {
  write("step_1", {2, 1, 1, 0}, 1, "llama2-7b");
  try {
    launch::choose_checkpoint(dir_.string(), {2, 1, 1, 0}, "gpt2-1.5b");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is of model llama2-7b, the job trains gpt2-1.5b"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(launch::choose_checkpoint(dir_.string(), {2, 1, 1, 0}, "llama2-7b"));
  EXPECT_THROW(launch::choose_checkpoint(dir_.string(), {1, 1, 64, 0}, ""), Error);  // more stages than layers
}

// morphrun --driver's choice for the whole step (MORPH_CHECKPOINT_CHOICE) is what every
// task resumes from, even where its own listing of the folder shows a newer one.
TEST_F(CheckpointChoice, TheDriversChoiceForTheStepIsTakenAsItIsWhenItFits) {
  const state::Layout two{2, 1, 1, 0}, four{4, 1, 1, 0};
  write("step_5", two, 5, "gpt2-1.5b");
  write("step_7", two, 7, "gpt2-1.5b");
  ASSERT_EQ(launch::choose_checkpoint(dir_.string(), two, "")->newest, (dir_ / "step_7").string());
  const auto chosen = launch::chosen_checkpoint((dir_ / "step_5").string(), two, "gpt2-1.5b");
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->resume, (dir_ / "step_5").string());
  EXPECT_EQ(chosen->index.progress.step, 5u);
  EXPECT_FALSE(chosen->needs_reshard);
  EXPECT_FALSE(launch::chosen_checkpoint("", two, "gpt2-1.5b"));  // the driver found none: a fresh start
  // What the task cannot use is refused before anything starts, naming the variable: a
  // folder it does not see (yet), another layout, another model.
  for (const auto& [folder, layout, model] :
       {std::tuple{(dir_ / "step_9").string(), two, "gpt2-1.5b"}, std::tuple{(dir_ / "step_5").string(), four, ""},
        std::tuple{(dir_ / "step_5").string(), two, "llama2-7b"}}) {
    try {
      launch::chosen_checkpoint(folder, layout, model);
      ADD_FAILURE() << folder << " " << state::to_string(layout) << " " << model;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("MORPH_CHECKPOINT_CHOICE=") != std::string::npos ||
                  what.find("is of model gpt2-1.5b, the job trains llama2-7b") != std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace morph
