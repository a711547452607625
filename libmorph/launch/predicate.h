// Conditions of the framework rules: "gc", "!offload", "zero>=2", "pp==1". A bare name is
// a boolean placeholder (with "!" for its negation); a comparison takes an integer
// placeholder, one of == != >= <= > <, and a decimal integer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "libmorph/launch/placeholders.h"

namespace morph::launch {

struct Predicate {
  enum class Op { is_true, is_false, eq, ne, ge, le, gt, lt };
  std::string name;
  Op op = Op::is_true;
  std::int64_t operand = 0;
  std::string text;  // as written, for messages
};

// Throws morph::Error "WHAT: ..." naming the unknown name or the bad comparison.
Predicate parse_predicate(std::string_view text, std::string_view what);

bool holds(const Predicate& predicate, const Values& values);

// A rule's condition ("when"): a predicate or a non-empty list of them, all of which must
// hold. Throws morph::Error "WHAT: ..." for anything else.
using Condition = std::vector<Predicate>;
Condition parse_condition(const nlohmann::json& when, std::string_view what);
bool holds(const Condition& condition, const Values& values);

}  // namespace morph::launch
