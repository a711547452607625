// The placeholders of the framework rules (docs/frameworks.md): one table of names and
// types, and their values under a plan. Rule files name them as {tp}, {seq}, ...
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "libmorph/launch/render_context.h"

namespace morph::launch {

enum class ValueType { integer, boolean, text };

struct Placeholder {
  const char* name;
  ValueType type;
  const char* meaning;  // one line, for docs and error messages
};

// Every placeholder, in documentation order.
std::span<const Placeholder> placeholders();
// The entry named `name`, or nullptr.
const Placeholder* find_placeholder(std::string_view name);
// "dp, tp, pp, ..." for messages.
std::string placeholder_names();

// A value, or (monostate) none, with `missing` saying why: an empty checkpoint folder, a
// request without a sequence length.
struct Value {
  std::variant<std::monostate, std::int64_t, bool, std::string> data;
  std::string missing;
};

using Values = std::map<std::string, Value, std::less<>>;

// The values of every placeholder under `context`; `config_file` is the path of the
// framework's generated file ("" when it has none).
Values placeholder_values(const RenderContext& context,
                          const std::string& framework, const std::string& config_file);

// A value as text: integers in decimal, booleans as true/false.
std::string value_text(const Value& value);

}  // namespace morph::launch
