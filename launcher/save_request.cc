#include "launcher/save_request.h"

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
  std::ofstream out(path, std::ios::trunc);
  out << "morphrun --driver asks this job's trainers to save\n";
  out.close();
  if (out) return true;
  *error = fmt::format("cannot create {}{}", path, ec ? ": " + ec.message() : "");
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
