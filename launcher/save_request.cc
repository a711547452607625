#include "launcher/save_request.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "launcher/marker_files.h"

namespace morph::launcher {

namespace fs = std::filesystem;

namespace {

// ".morph-save-request.JOBID": before the step's token, or the whole name of a request
// of a morphrun older than the tokens.
std::string job_prefix(std::uint32_t job_id) { return fmt::format(".morph-save-request.{}", job_id); }

}  // namespace

std::string save_request_path(const std::string& checkpoint_dir, std::uint32_t job_id, const std::string& step_token) {
  return fmt::format("{}/{}.{}", checkpoint_dir, job_prefix(job_id), step_token);
}

std::string new_step_token() {
  std::random_device random;
  const std::uint64_t high = random(), low = random();
  return fmt::format("{:016x}", (high << 32) ^ low);
}

void clear_save_requests(const std::string& checkpoint_dir, std::uint32_t job_id) {
  const std::string prefix = job_prefix(job_id);
  remove_marker_files(checkpoint_dir,
                      [&](const std::string& name) { return name == prefix || name.starts_with(prefix + "."); });
}

bool request_save(const std::string& path, std::string* error) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // Made afresh, never through what is there: in a folder others may write, a symlink
  // planted at the name would have had the driver truncate the file it points to.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int open_errno = errno;
    struct stat st {};
    if (open_errno == EEXIST && ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;  // asked before
    *error = fmt::format("cannot create {}: {}", path,
                         ec                                                  ? ec.message()
                         : open_errno == EEXIST && S_ISDIR(st.st_mode)       ? std::strerror(EISDIR)
                         : open_errno == EEXIST                              ? "something else than a file is there"
                                                                             : std::strerror(open_errno));
    return false;
  }
  static constexpr std::string_view kText = "morphrun --driver asks this job's trainers to save\n";
  const bool written = ::write(fd, kText.data(), kText.size()) == static_cast<ssize_t>(kText.size());
  if (::close(fd) == 0 && written) return true;
  *error = fmt::format("cannot write {}", path);
  return false;
}

bool save_requested(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

void clear_save_request(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

}  // namespace morph::launcher
