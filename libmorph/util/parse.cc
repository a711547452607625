#include "libmorph/util/parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {

std::string quote(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out += std::isprint(c) ? static_cast<char>(c) : '?';
  }
  if (text.size() > kMax) out += fmt::format("...' ({} bytes)", text.size());
  else out += "'";
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string to_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::int64_t parse_int(std::string_view text, std::string_view what, std::int64_t min,
                       std::int64_t max) {
  const std::string_view t = trim(text);
  if (t.empty()) throw Error(fmt::format("{}: empty value, expected an integer", what));
  std::int64_t value = 0;
  const char* first = t.data();
  if (*first == '+' && t.size() > 1 && t[1] != '-') ++first;  // "+5", never "+-5"
  const auto [end, ec] = std::from_chars(first, t.data() + t.size(), value);
  if (ec == std::errc::result_out_of_range)
    throw Error(fmt::format("{}: {} is out of range [{}, {}]", what, quote(t), min, max));
  if (ec != std::errc() || end != t.data() + t.size())
    throw Error(fmt::format("{}: {} is not an integer", what, quote(t)));
  if (value < min || value > max)
    throw Error(fmt::format("{}: {} is out of range [{}, {}]", what, value, min, max));
  return value;
}

double parse_double(std::string_view text, std::string_view what, double min, double max) {
  const std::string_view t = trim(text);
  if (t.empty()) throw Error(fmt::format("{}: empty value, expected a number", what));
  double value = 0;
  const char* first = t.data();
  if (*first == '+' && t.size() > 1 && t[1] != '-') ++first;
  const auto [end, ec] = std::from_chars(first, t.data() + t.size(), value);
  if (ec == std::errc::result_out_of_range)
    throw Error(fmt::format("{}: {} is out of range [{}, {}]", what, quote(t), min, max));
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(value))
    throw Error(fmt::format("{}: {} is not a number", what, quote(t)));
  if (value < min || value > max)
    throw Error(fmt::format("{}: {} is out of range [{}, {}]", what, quote(t), min, max));
  return value;
}

bool is_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

bool is_slurm_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

bool parse_bool(std::string_view text, std::string_view what) {
  const std::string v = to_lower(trim(text));
  if (v == "1" || v == "yes" || v == "true" || v == "on") return true;
  if (v == "0" || v == "no" || v == "false" || v == "off") return false;
  throw Error(fmt::format("{}: {} is not a boolean (yes/no)", what, quote(text)));
}

std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view text,
                                                                  char separator,
                                                                  std::string_view what) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string, std::less<>> keys;
  for (std::string_view item : split(text, separator)) {
    item = trim(item);
    if (item.empty()) throw Error(fmt::format("{}: empty item in {}", what, quote(text)));
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw Error(fmt::format("{}: {} is not key=value", what, quote(item)));
    std::string key(trim(item.substr(0, eq)));
    if (!keys.insert(key).second) throw Error(fmt::format("{}: {} given twice in {}", what, quote(key), quote(text)));
    out.emplace_back(std::move(key), std::string(trim(item.substr(eq + 1))));
  }
  return out;
}

}  // namespace morph
