#include "libmorph/launch/template.h"

#include <fmt/format.h>

#include "libmorph/launch/predicate.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::launch {
namespace {

using nlohmann::json;

constexpr std::string_view kWhen = "$when";

// One walker for checking (values == nullptr: every branch is kept) and rendering.
// Returns false when a "$when" drops the node.
bool expand(const json& node, const Values* values, const std::string& path, json& out) {
  if (node.is_string()) {
    const TextTemplate t = TextTemplate::parse(node.get<std::string>(), path);
    if (values != nullptr) out = t.render_json(*values);
    return true;
  }
  if (node.is_array()) {
    out = json::array();
    for (std::size_t i = 0; i < node.size(); ++i) {
      json item;
      if (expand(node[i], values, fmt::format("{}[{}]", path, i), item)) out.push_back(std::move(item));
    }
    return true;
  }
  if (node.is_object()) {
    if (const auto when = node.find(kWhen); when != node.end()) {
      const Condition condition = parse_condition(*when, fmt::format("{}.{}", path, kWhen));
      if (values != nullptr && !holds(condition, *values)) return false;
    }
    out = json::object();
    for (const auto& [key, value] : node.items()) {
      if (key == kWhen) continue;
      const std::string member = fmt::format("{}.{}", path, key);
      if (!key.empty() && key.front() == '$')
        throw Error(fmt::format("{}: unknown directive {} (only {} is known)", member, quote(key), kWhen));
      json item;
      if (expand(value, values, member, item)) out[key] = std::move(item);
    }
    return true;
  }
  out = node;  // numbers, booleans, null
  return true;
}

}  // namespace

TextTemplate TextTemplate::parse(std::string_view text, std::string_view what) {
  TextTemplate t;
  t.what_ = std::string(what);
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) t.pieces_.push_back({false, std::move(literal)});
    literal.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal += c;
      ++i;
    } else if (c == '{') {
      const std::size_t close = text.find('}', i);
      if (close == std::string_view::npos)
        throw Error(fmt::format("{}: {} has a '{{' without '}}' (write {{{{ for a brace)", what, quote(text)));
      const std::string name(text.substr(i + 1, close - i - 1));
      if (find_placeholder(name) == nullptr)
        throw Error(fmt::format("{}: unknown placeholder {{{}}} (known: {})", what, name, placeholder_names()));
      flush();
      t.pieces_.push_back({true, name});
      i = close;
    } else if (c == '}') {
      throw Error(fmt::format("{}: {} has a '}}' without '{{' (write }}}} for a brace)", what, quote(text)));
    } else {
      literal += c;
    }
  }
  flush();
  return t;
}

const Value& TextTemplate::lookup(const Values& values, const std::string& name) const {
  const auto it = values.find(name);
  if (it == values.end()) throw Error(fmt::format("{}: no value for {{{}}}", what_, name));
  if (std::holds_alternative<std::monostate>(it->second.data))
    throw Error(fmt::format("{}: {{{}}} has no value: {}", what_, name, it->second.missing));
  return it->second;
}

std::string TextTemplate::render(const Values& values) const {
  std::string out;
  for (const Piece& p : pieces_) out += p.placeholder ? value_text(lookup(values, p.text)) : p.text;
  return out;
}

json TextTemplate::render_json(const Values& values) const {
  if (pieces_.size() != 1 || !pieces_.front().placeholder) return render(values);
  const Value& v = lookup(values, pieces_.front().text);
  if (const auto* i = std::get_if<std::int64_t>(&v.data)) return *i;
  if (const auto* b = std::get_if<bool>(&v.data)) return *b;
  return std::get<std::string>(v.data);
}

bool TextTemplate::uses(std::string_view placeholder) const {
  for (const Piece& p : pieces_)
    if (p.placeholder && p.text == placeholder) return true;
  return false;
}

void check_json_template(const json& node, std::string_view what) {
  if (node.is_object() && node.contains(kWhen))
    throw Error(fmt::format("{}: the whole template cannot be conditional ({} at its top)", what, kWhen));
  json unused;
  expand(node, nullptr, std::string(what), unused);
}

json render_json_template(const json& node, const Values& values, std::string_view what) {
  json out;
  expand(node, &values, std::string(what), out);
  return out;
}

}  // namespace morph::launch
