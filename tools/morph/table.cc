#include "tools/morph/table.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

namespace morph::cli {

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << '\n';
  };
  emit(header_);
  for (const auto& row : rows_) emit(row);
}

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

std::string millis(double ms) { return ms >= 1000 ? fmt::format("{:.3f} s", ms / 1e3) : fmt::format("{:.1f} ms", ms); }

std::string percent(double ratio) { return fmt::format("{:.2f}", 100 * ratio); }

std::string local_time(std::int64_t unix_s) {
  char text[32];
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm local{};
  // A time beyond the calendar's years (a damaged database): the number itself.
  if (localtime_r(&t, &local) == nullptr || std::strftime(text, sizeof text, "%F %T", &local) == 0)
    return fmt::format("{} (Unix time)", unix_s);
  return text;
}

}  // namespace morph::cli
