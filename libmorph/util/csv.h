// A small strict CSV reader for measured data: one header line, comma separated fields
// without quoting, an optional UTF-8 byte-order mark. Errors name the file and line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace morph {

class CsvTable {
 public:
  static CsvTable read_file(const std::string& path);
  static CsvTable parse(std::string_view text, std::string source);

  const std::string& source() const { return source_; }
  std::size_t rows() const { return rows_.size(); }
  bool has_column(std::string_view name) const;
  const std::vector<std::string>& header() const { return header_; }

  // Field access; `row` is 0-based over data rows. Errors name source:line and column.
  std::string_view text(std::size_t row, std::string_view column) const;
  double number(std::size_t row, std::string_view column, double min, double max) const;
  std::int64_t integer(std::size_t row, std::string_view column, std::int64_t min,
                       std::int64_t max) const;
  // "file:line" of a data row, for messages.
  std::string where(std::size_t row) const;

 private:
  std::size_t column_index(std::string_view name) const;

  std::string source_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::size_t> line_numbers_;
};

}  // namespace morph
