// How morphrun --driver asks its step's trainers to save (launcher/save_request.h).
#include "launcher/save_request.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace morph::launcher {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

TEST(SaveRequest, IsAFileInTheCheckpointFolderAndAFailureSaysWhy) {
  const fs::path dir = fresh_dir("morph-save-request");
  const std::string path = save_request_path((dir / "ckpt").string(), 42, "00c0ffee00c0ffee");
  EXPECT_EQ(path, (dir / "ckpt/.morph-save-request.42.00c0ffee00c0ffee").string());
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
  // A symlink planted at the name is not written through (it truncated its target).
  fs::remove_all(path);
  const std::string victim = (dir / "victim").string();
  { std::ofstream(victim) << "precious"; }
  fs::create_symlink(victim, path);
  EXPECT_FALSE(request_save(path, &error));
  EXPECT_EQ(error, "cannot create " + path + ": something else than a file is there");
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  // Asked twice: the second finds its own request there.
  fs::remove(path);
  ASSERT_TRUE(request_save(path, &error)) << error;
  EXPECT_TRUE(request_save(path, &error)) << error;
  fs::remove_all(dir);
}

// The review's case: a request of an earlier step (or run) of the job is still there, or
// still in a node's NFS cache, when the next step starts; it must not ask that step to save.
TEST(SaveRequest, ARequestOfAnEarlierStepOrRunIsNoRequestToANewStep) {
  const fs::path dir = fresh_dir("morph-save-request-stale");
  const std::string ckpt = (dir / "ckpt").string();
  const std::string earlier = save_request_path(ckpt, 42, new_step_token());
  std::string error;
  ASSERT_TRUE(request_save(earlier, &error)) << error;  // left behind: never removed
  const std::string next = save_request_path(ckpt, 42, new_step_token());
  EXPECT_NE(next, earlier);
  EXPECT_FALSE(save_requested(next));
  ASSERT_TRUE(request_save(next, &error)) << error;
  EXPECT_TRUE(save_requested(next));
  fs::remove_all(dir);
}

TEST(SaveRequest, EveryStepDrawsATokenOfItsOwn) {
  std::set<std::string> tokens;
  for (int i = 0; i < 1000; ++i) {
    const std::string token = new_step_token();
    EXPECT_EQ(token.size(), 16u);
    EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
    tokens.insert(token);
  }
  EXPECT_EQ(tokens.size(), 1000u);
}

TEST(SaveRequest, ClearingAJobsRequestsLeavesOtherJobsAndFiles) {
  const fs::path dir = fresh_dir("morph-save-request-clear");
  const fs::path ckpt = dir / "ckpt";
  fs::create_directories(ckpt / "step_7");
  std::string error;
  for (const std::string& path : {save_request_path(ckpt.string(), 42, "a"), save_request_path(ckpt.string(), 42, "b"),
                                  save_request_path(ckpt.string(), 420, "a"), save_request_path(ckpt.string(), 7, "a")})
    ASSERT_TRUE(request_save(path, &error)) << error;
  std::ofstream(ckpt / ".morph-save-request.42") << "a morphrun older than the tokens\n";
  clear_save_requests(ckpt.string(), 42);
  std::set<std::string> left;
  for (const auto& entry : fs::directory_iterator(ckpt)) left.insert(entry.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{".morph-save-request.420.a", ".morph-save-request.7.a", "step_7"}));
  clear_save_requests((dir / "absent").string(), 42);  // no folder is fine
  fs::remove_all(dir);
}

}  // namespace
}  // namespace morph::launcher
