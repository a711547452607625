// Reading and appending text files with errors that name the path (libmorph/util/text_file.h).
#include "libmorph/util/text_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir() {
  const fs::path dir = fs::temp_directory_path() / ("morph-text-file-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string error_of(const auto& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TextFile, AppendingCreatesTheFileAndAddsWholeLines) {
  const std::string path = (fresh_dir() / "job.metrics").string();
  append_text_line(path, "# 1.000 started", "the metrics");
  append_text_line(path, "# 2.000 ranks exit=75", "the metrics");
  EXPECT_EQ(read_text_file(path, "the metrics"), "# 1.000 started\n# 2.000 ranks exit=75\n");
}

TEST(TextFile, AFailedAppendNamesThePathAndTheCause) {
  const fs::path dir = fresh_dir();
  const std::string missing = (dir / "no-such-folder" / "job.metrics").string();
  EXPECT_EQ(error_of([&] { append_text_line(missing, "x", "the job's metrics file"); }),
            "cannot open " + missing + " (the job's metrics file) to append to it: No such file or directory");
  EXPECT_EQ(error_of([&] { append_text_line(dir.string(), "x", "the metrics"); }),
            "cannot open " + dir.string() + " (the metrics) to append to it: Is a directory");
  if (::access("/dev/full", W_OK) == 0) {  // a full disk: write(2) fails with ENOSPC
    EXPECT_EQ(error_of([] { append_text_line("/dev/full", "x", "the metrics"); }),
              "cannot append to /dev/full (the metrics): No space left on device");
  }
}

// A model file in PerfModelDir is replaced whole: a reader sees the old or the new one, and
// nothing is left beside it; a failure leaves the old file and no temporary one.
TEST(TextFile, AReplacementIsWholeAndAFailureKeepsTheOldFile) {
  const fs::path dir = fresh_dir();
  const std::string path = (dir / "bert.json").string();
  replace_text_file(path, "old", "--save");
  replace_text_file(path, "new model", "--save");
  EXPECT_EQ(read_text_file(path, "t"), "new model");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "a temporary file was left";
  const std::string missing = (dir / "no-such-folder" / "bert.json").string();
  EXPECT_NE(error_of([&] { replace_text_file(missing, "x", "--save"); }).find("cannot write " + missing + " (--save)"),
            std::string::npos);
  fs::create_directory(dir / "folder.json");
  const std::string folder = (dir / "folder.json").string();
  EXPECT_NE(error_of([&] { replace_text_file(folder, "x", "--save"); }).find("rename"), std::string::npos);
  EXPECT_EQ(read_text_file(path, "t"), "new model");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2) << "a temporary file was left";
}

// In a folder others may write (a shared checkpoint folder), a symlink planted at the
// temporary name made the writer truncate the file it points to (security review).
TEST(TextFile, AReplacementNeverWritesThroughAPlantedSymlink) {
  const fs::path dir = fresh_dir();
  const std::string victim = (dir / "victim").string(), path = (dir / "choice").string();
  replace_text_file(victim, "precious", "t");
  fs::create_symlink(victim, fmt::format("{}.{}.tmp", path, ::getpid()));
  replace_text_file(path, "chosen", "t");
  EXPECT_EQ(read_text_file(victim, "t"), "precious");
  EXPECT_EQ(read_text_file(path, "t"), "chosen");
}

TEST(TextFile, ReadingRefusesWhatIsNotARegularFile) {
  const fs::path dir = fresh_dir();
  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { read_text_file(fifo, "the plan"); }).find("a FIFO"), std::string::npos);
  EXPECT_NE(error_of([&] { read_text_file((dir / "none").string(), "the plan"); }).find((dir / "none").string()),
            std::string::npos);
}

}  // namespace
}  // namespace morph
