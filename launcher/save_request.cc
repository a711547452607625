#include "launcher/save_request.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <fmt/format.h>

namespace morph::launcher {

namespace fs = std::filesystem;

std::string save_request_path(const std::string& checkpoint_dir, std::uint32_t job_id) {
  return fmt::format("{}/.morph-save-request.{}", checkpoint_dir, job_id);
}

bool request_save(const std::string& path, std::string* error) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  errno = 0;
  std::ofstream out(path, std::ios::trunc);
  if (!out) {
    const int open_errno = errno;  // left by open(2)
    *error = fmt::format("cannot create {}: {}", path,
                         ec ? ec.message() : open_errno != 0 ? std::strerror(open_errno) : "open failed");
    return false;
  }
  out << "morphrun --driver asks this job's trainers to save\n";
  out.close();
  if (out) return true;
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
