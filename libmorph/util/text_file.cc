#include "libmorph/util/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

std::string read_text_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw Error(fmt::format("{}: {}: no such file", what, path));
  if (std::filesystem::is_directory(status)) throw Error(fmt::format("{}: {}: is a folder, not a file", what, path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: {}: cannot open: {}", what, path, std::strerror(errno)));
  std::ostringstream buffer;
  char chunk[1 << 16];
  std::size_t total = 0;
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    total += static_cast<std::size_t>(in.gcount());
    if (total > max_bytes) throw Error(fmt::format("{}: {}: larger than {} bytes", what, path, max_bytes));
    buffer.write(chunk, in.gcount());
  }
  if (in.bad()) throw Error(fmt::format("{}: {}: read error", what, path));
  return buffer.str();
}

}  // namespace morph
