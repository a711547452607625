// How morphrun --driver asks its step's trainers to save (launcher/save_request.h).
#include "launcher/save_request.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace morph::launcher {
namespace {

namespace fs = std::filesystem;

TEST(SaveRequest, IsAFileInTheCheckpointFolderAndAFailureSaysWhy) {
  const fs::path dir = fs::temp_directory_path() / ("morph-save-request-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = save_request_path((dir / "ckpt").string(), 42);
  EXPECT_EQ(path, (dir / "ckpt/.morph-save-request.42").string());
  EXPECT_FALSE(save_requested(path));
  std::string error;
  ASSERT_TRUE(request_save(path, &error)) << error;  // the folder is made
  EXPECT_TRUE(save_requested(path));
  clear_save_request(path);
  EXPECT_FALSE(save_requested(path));
  clear_save_request(path);  // none there is fine
  // A folder in the request's place (even root cannot open one for writing): the
  // message gives the reason.
  fs::create_directories(path);
  EXPECT_FALSE(request_save(path, &error));
  EXPECT_EQ(error, "cannot create " + path + ": Is a directory");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace morph::launcher
