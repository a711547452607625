// A checkpoint's stage and its writer's lock (libmorph/state/checkpoint.h): one writer
// per checkpoint; a stage left by a crash, with its lock file, is taken over. Its
// index.json is refused, naming the file, when it is nested too deeply or not a file.
#include "libmorph/state/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
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

// The index of checkpoint `dir` as text.
std::string index_text(const std::string& dir) {
  std::ifstream in(dir + "/index.json");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Checkpoint "a" with "trainer": {"seed": ...} holding arrays nested `depth` deep.
std::string nested_trainer(const std::string& good, int depth) {
  nlohmann::json j = nlohmann::json::parse(good);
  j["trainer"] = {{"seed", "NESTED"}};
  std::string text = j.dump();
  const std::size_t at = text.find("\"NESTED\"");
  return text.replace(at, 8, std::string(static_cast<std::size_t>(depth), '[') +
                                 std::string(static_cast<std::size_t>(depth), ']'));
}

// Review of the state code: a 200 KB index.json nested 100,000 deep crashed `morph
// reshard` and morphrun's choice of a checkpoint (a recursive copy overflowed the stack).
// It is refused before a JSON value is built; a trainer's moderately nested values pass.
TEST_F(CheckpointStageTest, AnIndexNestedTooDeeplyIsRefusedNamingItsFile) {
  const std::string good = index_text(path("a"));
  std::ofstream(path("a") + "/index.json") << nested_trainer(good, 100000);
  try {
    read_index(path("a"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path("a") + "/index.json: JSON nested deeper than 64 levels");
  }
  std::ofstream(path("a") + "/index.json") << nested_trainer(good, 60);
  const CheckpointIndex nested = read_index(path("a"));
  const nlohmann::json* seed = &nested.trainer.at("seed");
  for (int level = 1; level < 60; ++level) seed = &seed->at(0);
  EXPECT_EQ(*seed, nlohmann::json::array());
}

// Review of the state code: a FIFO named index.json blocked read_index() forever (and
// with it `morph reshard` and morphrun). Anything but a regular file is refused at once.
TEST_F(CheckpointStageTest, AnIndexThatIsNoRegularFileIsRefusedWithoutWaiting) {
  const std::string folder = path("fifo");
  fs::create_directories(folder);
  const std::string fifo = folder + "/index.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto read = std::async(std::launch::async, [&]() -> std::string {
    try {
      read_index(folder);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  });
  if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "read_index still waits on the FIFO after 10 s";
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // releases the reader
    if (writer >= 0) ::close(writer);
  }
  EXPECT_EQ(read.get(), "checkpoint index: " + fifo + ": is a FIFO, not a regular file");
}

}  // namespace
}  // namespace morph::state
