#include "libmorph/util/csv.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph {

CsvTable CsvTable::read_file(const std::string& path) { return parse(read_text_file(path, "CSV"), path); }

CsvTable CsvTable::parse(std::string_view text, std::string source) {
  CsvTable table;
  table.source_ = std::move(source);
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  if (text.find('\0') != std::string_view::npos)
    throw Error(fmt::format("{}: binary data (NUL byte), expected CSV text", table.source_));
  std::size_t line_number = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    std::vector<std::string> fields;
    for (std::string_view field : split(line, ',')) fields.emplace_back(trim(field));
    if (table.header_.empty()) {
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (fields[i].empty())
          throw Error(fmt::format("{}:{}: empty column name in header", table.source_, line_number));
        for (std::size_t j = 0; j < i; ++j)  // which of two would a reader mean?
          if (fields[j] == fields[i])
            throw Error(fmt::format("{}:{}: column '{}' appears twice in the header (columns {} and {})",
                                    table.source_, line_number, fields[i], j + 1, i + 1));
      }
      table.header_ = std::move(fields);
      continue;
    }
    if (fields.size() != table.header_.size())
      throw Error(fmt::format("{}:{}: {} fields, the header has {}", table.source_, line_number,
                              fields.size(), table.header_.size()));
    table.rows_.push_back(std::move(fields));
    table.line_numbers_.push_back(line_number);
  }
  if (table.header_.empty()) throw Error(fmt::format("{}: empty file, expected a CSV header", table.source_));
  return table;
}

bool CsvTable::has_column(std::string_view name) const {
  for (const std::string& h : header_)
    if (h == name) return true;
  return false;
}

std::size_t CsvTable::column_index(std::string_view name) const {
  for (std::size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return i;
  throw Error(fmt::format("{}: missing column '{}'", source_, name));
}

std::string CsvTable::where(std::size_t row) const {
  return fmt::format("{}:{}", source_, line_numbers_.at(row));
}

std::string_view CsvTable::text(std::size_t row, std::string_view column) const {
  return rows_.at(row)[column_index(column)];
}

double CsvTable::number(std::size_t row, std::string_view column, double min, double max) const {
  return parse_double(text(row, column), fmt::format("{}: column {}", where(row), column), min, max);
}

std::int64_t CsvTable::integer(std::size_t row, std::string_view column, std::int64_t min,
                               std::int64_t max) const {
  return parse_int(text(row, column), fmt::format("{}: column {}", where(row), column), min, max);
}

}  // namespace morph
