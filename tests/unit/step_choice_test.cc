// One checkpoint choice for every task of a plain srun step (launcher/step_choice.h).
#include "launcher/step_choice.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "tests/state_fixture.h"

namespace morph::launcher {
namespace {

namespace fs = std::filesystem;

class StepChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("morph-step-choice-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const state::Layout& layout, std::uint64_t step) {
    test::write_synthetic_checkpoint((dir_ / name).string(), test::gpt_spec({}), layout, {step, step * 64},
                                     nlohmann::json{{"morph_model", "gpt"}});
  }
  std::string dir() const { return dir_.string(); }
  fs::path dir_;
};

const state::Layout kTwo{2, 1, 1, 0};
const state::Layout kFour{4, 1, 1, 0};

// The NFS case: task 1's node still lists only the older checkpoint when it starts, task 0
// sees the newer. Task 1 takes task 0's folder, not the newest it can list itself.
TEST_F(StepChoice, EveryTaskTakesTask0sFolderWhateverItsOwnListingSays) {
  write("step_10", kTwo, 10);
  write("step_20", kFour, 20);
  const StepChoiceId id{42, 0, 3};
  // Task 0 published step_10 as the newest it saw.
  publish_step_choice(dir(), id, (dir_ / "step_10").string(), "");
  const auto choice = step_checkpoint_choice(dir(), id, 1, kFour, "gpt", 5);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->newest, (dir_ / "step_10").string());
  EXPECT_TRUE(choice->needs_reshard);  // as task 0 decided for it: in layout dp=2, the plan needs dp=4
  EXPECT_EQ(choice->resume, launch::resharded_name((dir_ / "step_10").string(), kFour));
  // A fresh start for all when task 0 found none.
  const StepChoiceId next{42, 0, 4};
  publish_step_choice(dir(), next, "", "");
  EXPECT_FALSE(step_checkpoint_choice(dir(), next, 3, kFour, "gpt", 5));
}

// Task 0 chooses as choose_checkpoint() does, and its file is what the other tasks read,
// even when they start before it has chosen.
TEST_F(StepChoice, Task0ChoosesAndTheOthersWaitForIt) {
  write("step_10", kTwo, 10);
  write("step_20", kFour, 20);
  const StepChoiceId id{7, 1, 0};
  auto waiting = std::async(std::launch::async, [&] { return step_checkpoint_choice(dir(), id, 2, kFour, "gpt", 30); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto mine = step_checkpoint_choice(dir(), id, 0, kFour, "gpt", 30);
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->newest, (dir_ / "step_20").string());
  EXPECT_FALSE(mine->needs_reshard);
  const auto theirs = waiting.get();
  ASSERT_TRUE(theirs);
  EXPECT_EQ(theirs->newest, mine->newest);
  EXPECT_EQ(theirs->resume, mine->resume);
  EXPECT_TRUE(fs::exists(step_choice_path(dir(), id)));
  EXPECT_EQ(step_choice_path(dir(), id), dir() + "/.morph-choice.7.1.0");
}

// Task 0's error reaches every task at once, rather than after the wait.
TEST_F(StepChoice, Task0sErrorIsEveryTasksError) {
  write("step_10", kTwo, 10);
  const StepChoiceId id{8, 0, 0};
  try {
    step_checkpoint_choice(dir(), id, 0, kTwo, "llama", 5);
    FAIL() << "task 0 took another model's checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is of model gpt, the job trains llama"), std::string::npos) << e.what();
  }
  const auto started = std::chrono::steady_clock::now();
  try {
    step_checkpoint_choice(dir(), id, 1, kTwo, "llama", 30);
    FAIL() << "task 1 did not fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("task 0 of the step: checkpoint"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the job trains llama"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

// No file in time (a --checkpoint folder the nodes do not share): the message says where
// it looked and what to check; a folder named that never shows is named too.
TEST_F(StepChoice, AWaitThatEndsNamesTheFileAndTheSharedFolder) {
  const StepChoiceId id{9, 0, 0};
  try {
    step_checkpoint_choice(dir(), id, 1, kTwo, "gpt", 0.3);
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("waited 0.3 s (CheckpointTimeoutSeconds) for task 0's checkpoint choice in " + dir() +
                        "/.morph-choice.9.0.0: it is not there"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("every node of the step shares"), std::string::npos) << what;
  }
  publish_step_choice(dir(), id, (dir_ / "step_99").string(), "");
  try {
    step_checkpoint_choice(dir(), id, 1, kTwo, "gpt", 0.3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it names " + (dir_ / "step_99").string() + ", which this node cannot read"),
              std::string::npos)
        << e.what();
  }
}

// A requeued job starts its steps at 0 again: its earlier run's files are other files,
// and task 0 removes them, and its other steps', when it publishes; other jobs' stay.
TEST_F(StepChoice, EachRunAndStepHasItsFileAndTheOldOnesGo) {
  write("step_10", kTwo, 10);
  publish_step_choice(dir(), {5, 0, 0}, (dir_ / "step_10").string(), "");
  publish_step_choice(dir(), {5, 0, 1}, (dir_ / "step_10").string(), "");
  publish_step_choice(dir(), {55, 0, 0}, "", "");
  EXPECT_NE(step_choice_path(dir(), {5, 1, 0}), step_choice_path(dir(), {5, 0, 0}));
  publish_step_choice(dir(), {5, 1, 0}, "", "");
  EXPECT_FALSE(fs::exists(step_choice_path(dir(), {5, 0, 0})));
  EXPECT_FALSE(fs::exists(step_choice_path(dir(), {5, 0, 1})));
  EXPECT_TRUE(fs::exists(step_choice_path(dir(), {5, 1, 0})));
  EXPECT_TRUE(fs::exists(step_choice_path(dir(), {55, 0, 0})));
  std::string folder;
  EXPECT_TRUE(read_step_choice(step_choice_path(dir(), {5, 1, 0}), &folder));
  EXPECT_EQ(folder, "");
  // Only the job's dot-files: the checkpoint is untouched, and no temporary file is left.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) files += entry.path().filename().string().ends_with(".tmp");
  EXPECT_EQ(files, 0);
  EXPECT_TRUE(fs::exists(dir_ / "step_10" / "index.json"));
  std::ofstream(step_choice_path(dir(), {6, 0, 0})) << "something else";
  EXPECT_THROW(read_step_choice(step_choice_path(dir(), {6, 0, 0}), &folder), Error);
}

}  // namespace
}  // namespace morph::launcher
