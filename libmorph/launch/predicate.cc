#include "libmorph/launch/predicate.h"

#include <array>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::launch {
namespace {

// Two-character operators first, so that ">=" is not read as ">".
constexpr std::array<std::pair<std::string_view, Predicate::Op>, 6> kOps{{
    {"==", Predicate::Op::eq}, {"!=", Predicate::Op::ne}, {">=", Predicate::Op::ge},
    {"<=", Predicate::Op::le}, {">", Predicate::Op::gt},  {"<", Predicate::Op::lt},
}};

std::string names_of(ValueType type) {
  std::string names;
  for (const Placeholder& p : placeholders())
    if (p.type == type) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  return names;
}

}  // namespace

Predicate parse_predicate(std::string_view text, std::string_view what) {
  Predicate p;
  p.text = std::string(text);
  const std::string_view trimmed = trim(text);
  for (const auto& [symbol, op] : kOps) {
    const std::size_t at = trimmed.find(symbol);
    if (at == std::string_view::npos) continue;
    p.name = std::string(trim(trimmed.substr(0, at)));
    p.op = op;
    const Placeholder* ph = find_placeholder(p.name);
    if (ph == nullptr || ph->type != ValueType::integer)
      throw Error(fmt::format("{}: unknown predicate {}: {} is not an integer placeholder (known: {})", what,
                              quote(text), quote(p.name), names_of(ValueType::integer)));
    p.operand = parse_int(trim(trimmed.substr(at + symbol.size())), fmt::format("{}: predicate {}", what, quote(text)),
                          -(std::int64_t{1} << 40), std::int64_t{1} << 40);
    return p;
  }
  std::string_view name = trimmed;
  if (!name.empty() && name.front() == '!') {
    p.op = Predicate::Op::is_false;
    name = trim(name.substr(1));
  }
  p.name = std::string(name);
  const Placeholder* ph = find_placeholder(p.name);
  if (ph == nullptr || ph->type != ValueType::boolean)
    throw Error(fmt::format("{}: unknown predicate {} (known: {}, or a comparison such as zero>=1 of {})", what,
                            quote(text), names_of(ValueType::boolean), names_of(ValueType::integer)));
  return p;
}

bool holds(const Predicate& p, const Values& values) {
  const auto it = values.find(p.name);
  if (it == values.end()) throw Error(fmt::format("predicate {}: no value for {}", quote(p.text), p.name));
  if (const bool* b = std::get_if<bool>(&it->second.data)) return p.op == Predicate::Op::is_false ? !*b : *b;
  const std::int64_t* v = std::get_if<std::int64_t>(&it->second.data);
  if (v == nullptr)
    throw Error(fmt::format("predicate {}: {} has no value: {}", quote(p.text), p.name, it->second.missing));
  switch (p.op) {
    case Predicate::Op::eq: return *v == p.operand;
    case Predicate::Op::ne: return *v != p.operand;
    case Predicate::Op::ge: return *v >= p.operand;
    case Predicate::Op::le: return *v <= p.operand;
    case Predicate::Op::gt: return *v > p.operand;
    case Predicate::Op::lt: return *v < p.operand;
    case Predicate::Op::is_true:
    case Predicate::Op::is_false: break;
  }
  throw Error(fmt::format("predicate {}: {} is not a boolean", quote(p.text), p.name));
}

Condition parse_condition(const nlohmann::json& when, std::string_view what) {
  Condition condition;
  if (when.is_string()) {
    condition.push_back(parse_predicate(when.get<std::string>(), what));
    return condition;
  }
  if (!when.is_array() || when.empty())
    throw Error(fmt::format("{}: a condition is a predicate or a non-empty list of predicates", what));
  for (const nlohmann::json& p : when) {
    if (!p.is_string()) throw Error(fmt::format("{}: conditions must be strings", what));
    condition.push_back(parse_predicate(p.get<std::string>(), what));
  }
  return condition;
}

bool holds(const Condition& condition, const Values& values) {
  for (const Predicate& p : condition)
    if (!holds(p, values)) return false;
  return true;
}

}  // namespace morph::launch
