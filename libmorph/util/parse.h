// Strict parsing of numbers and key=value lists. Every function names `what` (a flag, a
// key, a column) in its error, rejects trailing garbage, overflow and non-finite values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace morph {

std::int64_t parse_int(std::string_view text, std::string_view what,
                       std::int64_t min, std::int64_t max);
double parse_double(std::string_view text, std::string_view what, double min, double max);
bool parse_bool(std::string_view text, std::string_view what);

std::string_view trim(std::string_view text);
std::vector<std::string_view> split(std::string_view text, char separator);

// "a=1,b=2" -> {{"a","1"},{"b","2"}}; rejects empty keys, missing '=' and a key given twice.
std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view text,
                                                                  char separator,
                                                                  std::string_view what);

// One or more decimal digits, nothing else (no sign, no space).
bool is_digits(std::string_view text);

// A name as Slurm writes node names, GRES types and features: one or more letters,
// digits, '-', '_' or '.'.
bool is_slurm_name(std::string_view name);

std::string to_lower(std::string_view text);
std::string to_upper(std::string_view text);

// A value quoted for an error message, shortened when long or hostile.
std::string quote(std::string_view text);

}  // namespace morph
