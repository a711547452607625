#include "profiler/size_sweep.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::hw {
namespace {

constexpr std::size_t kMinBytes = 4;
constexpr std::size_t kMaxBytes = std::size_t{4} << 30;
constexpr std::size_t kStep = 4;

std::size_t parse_bytes(std::string_view text, std::string_view whole) {
  text = trim(text);
  std::size_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': scale = std::size_t{1} << 10; break;
      case 'M': case 'm': scale = std::size_t{1} << 20; break;
      case 'G': case 'g': scale = std::size_t{1} << 30; break;
      default: break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  const auto value = parse_int(text, fmt::format("--sizes {}", quote(whole)), 1, static_cast<std::int64_t>(kMaxBytes));
  const std::size_t bytes = static_cast<std::size_t>(value) * scale;
  if (bytes < kMinBytes || bytes > kMaxBytes)
    throw Error(fmt::format("--sizes {}: sizes run from 4 bytes to 4G", quote(whole)));
  return bytes;
}

}  // namespace

std::vector<std::size_t> parse_size_sweep(std::string_view text) {
  const std::vector<std::string_view> parts = split(text, ':');
  if (parts.size() != 2) throw Error(fmt::format("--sizes {} is not MIN:MAX (e.g. 1K:64M)", quote(text)));
  const std::size_t min_bytes = parse_bytes(parts[0], text), max_bytes = parse_bytes(parts[1], text);
  if (min_bytes > max_bytes) throw Error(fmt::format("--sizes {}: MIN is larger than MAX", quote(text)));
  std::vector<std::size_t> sizes;
  for (std::size_t s = min_bytes; s <= max_bytes; s *= kStep) sizes.push_back(s);
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
  return sizes;
}

std::vector<int> mpi_message_parts(std::size_t bytes) {
  constexpr std::size_t kPartBytes = std::size_t{1} << 30;
  std::vector<int> parts;
  for (; bytes > kPartBytes; bytes -= kPartBytes) parts.push_back(static_cast<int>(kPartBytes));
  parts.push_back(static_cast<int>(bytes));
  return parts;
}

std::string size_label(std::size_t bytes) {
  for (auto [shift, suffix] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}})
    if (bytes >= (std::size_t{1} << shift) && bytes % (std::size_t{1} << shift) == 0)
      return fmt::format("{}{}", bytes >> shift, suffix);
  return std::to_string(bytes);
}

}  // namespace morph::hw
