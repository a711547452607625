// Plain-text tables with aligned columns for human output.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace morph::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string gib(double bytes);     // "61.2 GiB"
std::string millis(double ms);     // "812.4 ms" / "3.210 s"
std::string percent(double ratio); // "7.35"
std::string local_time(std::int64_t unix_s);  // "2026-11-28 17:49:38", local time

}  // namespace morph::cli
