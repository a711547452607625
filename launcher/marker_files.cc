#include "launcher/marker_files.h"

#include <filesystem>
#include <system_error>
#include <vector>

namespace morph::launcher {

namespace fs = std::filesystem;

void remove_marker_files(const std::string& dir, const std::function<bool(const std::string& name)>& matches) {
  std::vector<fs::path> markers;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (matches(it->path().filename().string())) markers.push_back(it->path());
  for (const fs::path& marker : markers) fs::remove(marker, ec);
}

}  // namespace morph::launcher
