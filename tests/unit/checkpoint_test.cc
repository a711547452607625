// A checkpoint's stage and its writer's lock (libmorph/state/checkpoint.h): one writer
// per checkpoint; a stage left by a crash, with its lock file, is taken over.
#include "libmorph/state/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "tests/state_fixture.h"

namespace morph::state {
namespace {

namespace fs = std::filesystem;

class CheckpointStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("morph-stage-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    test::write_synthetic_checkpoint(path("a"), test::gpt_spec({}), Layout{1, 1, 1, 0});
    index_ = read_index(path("a"));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // The rank file of checkpoint "a", copied into `stage`.
  void fill(const CheckpointStage& stage) const {
    fs::copy_file(path("a") + "/" + rank_file_name(0), stage.file_path(0));
  }

  fs::path dir_;
  CheckpointIndex index_;
};

// A user's `morph reshard` to the target morphrun was resharding to removed morphrun's
// live stage, whose files, sized up front, could then be committed full of zeros.
TEST_F(CheckpointStageTest, ASecondWriterIsRefusedAndTheFirstsFilesSurviveAndCommit) {
  const std::string target = path("b");
  CheckpointStage first(target);
  fill(first);
  EXPECT_TRUE(fs::exists(stage_lock_file(target)));
  try {
    CheckpointStage second(target);
    FAIL() << "a second stage of " << target << " was made";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "checkpoint " + target + ": another process is writing it (it holds " + target + ".partial.lock)");
  }
  ASSERT_TRUE(fs::exists(first.file_path(0)));
  EXPECT_EQ(fs::file_size(first.file_path(0)), index_.files[0].bytes);
  EXPECT_TRUE(fs::exists(stage_lock_file(target)));  // the refused writer left the lock alone
  first.commit(index_, true);
  EXPECT_NO_THROW(verify_files(target, read_index(target)));
  EXPECT_FALSE(fs::exists(stage_folder(target)));
  EXPECT_FALSE(fs::exists(stage_lock_file(target)));
  // Committed: a new writer takes the lock and finds the checkpoint there.
  try {
    CheckpointStage again(target);
    FAIL() << "a stage of the committed " << target << " was made";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(stage_lock_file(target)));
}

TEST_F(CheckpointStageTest, AStageDestroyedUncommittedOrLeftByACrashIsTakenOver) {
  const std::string target = path("b");
  {
    CheckpointStage abandoned(target);
    fill(abandoned);
  }
  EXPECT_FALSE(fs::exists(stage_folder(target)));
  EXPECT_FALSE(fs::exists(stage_lock_file(target)));
  {
    CheckpointStage next(target);
    EXPECT_TRUE(fs::is_empty(next.path()));
  }
  // A crash leaves the stage and the lock file, whose lock went with the process.
  const std::string crashed = path("c");
  fs::create_directories(stage_folder(crashed));
  std::ofstream(stage_folder(crashed) + "/" + rank_file_name(0)) << "half a file";
  std::ofstream(stage_lock_file(crashed)) << "";
  {
    CheckpointStage stage(crashed);
    EXPECT_TRUE(fs::is_empty(stage.path()));
    fill(stage);
    stage.commit(index_, true);
  }
  EXPECT_NO_THROW(verify_files(crashed, read_index(crashed)));
  EXPECT_FALSE(fs::exists(stage_lock_file(crashed)));
  // A writer refused because the checkpoint exists leaves no lock file behind either.
  EXPECT_THROW(CheckpointStage{path("a")}, Error);
  EXPECT_FALSE(fs::exists(stage_lock_file(path("a"))));
}

}  // namespace
}  // namespace morph::state
