#include "libmorph/state/state_spec.h"

#include <limits>
// GCC 12 warns inside <regex> under -fsanitize (a known false positive, GCC bug 105562).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "libmorph/util/text_file.h"

namespace morph::state {
namespace {

using nlohmann::json;

constexpr std::pair<Split, const char*> kSplits[] = {
    {Split::replicated, "replicated"}, {Split::column, "column"}, {Split::row, "row"}, {Split::vocab, "vocab"}};
constexpr std::pair<Stage, const char*> kStages[] = {
    {Stage::layer, "layer"}, {Stage::first, "first"}, {Stage::last, "last"}, {Stage::first_and_last, "first_and_last"}};

template <typename E, std::size_t N>
const char* name_of(const std::pair<E, const char*> (&table)[N], E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "?";
}

template <typename E, std::size_t N>
E parse_enum(const std::pair<E, const char*> (&table)[N], std::string_view text, std::string_view what) {
  std::string known;
  for (const auto& [v, name] : table) {
    if (text == name) return v;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", name);
  }
  throw Error(fmt::format("{}: {} is not one of {}", what, quote(text), known));
}

const json& member(const json& j, const char* key, std::string_view what) {
  if (!j.is_object() || !j.contains(key)) throw Error(fmt::format("{}: missing {}", what, quote(key)));
  return j.at(key);
}

std::string string_member(const json& j, const char* key, std::string_view what) {
  const json& v = member(j, key, what);
  if (!v.is_string()) throw Error(fmt::format("{}: {} must be a string", what, key));
  return v.get<std::string>();
}

std::int64_t int_member(const json& j, const char* key, std::string_view what, std::int64_t min, std::int64_t max) {
  const json& v = member(j, key, what);
  if (!v.is_number_integer()) throw Error(fmt::format("{}: {} must be an integer", what, key));
  const auto x = v.get<std::int64_t>();
  if (x < min || x > max) throw Error(fmt::format("{}: {} = {} is out of range [{}, {}]", what, key, x, min, max));
  return x;
}

}  // namespace

std::uint64_t ParamSpec::elements() const {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

namespace {

// The names of the tensors a layout stores (shard_map.h) are all distinct: no optimizer
// state named twice, and no parameter whose name is another tensor's. Under ZeRO 0 a
// file holds <param> and optim.<state>.<param>; under ZeRO 1 and 2 <param> and
// optim.<state>; under ZeRO 3 params.flat and optim.<state>, distinct once the states
// are. Parameter names are checked distinct by check_params().
void check_tensor_names(const StateSpec& s) {
  std::set<std::string> states;
  for (const std::string& state : s.optimizer) {
    if (state.empty()) throw Error("state: an optimizer state has no name");
    if (!states.insert(state).second) throw Error(fmt::format("state: optimizer state {} appears twice", quote(state)));
  }
  // A tensor stored under `name`: the parameter `param` itself (state -1) or its state `state`.
  struct Owner {
    std::size_t param = 0;
    int state = -1;
  };
  auto text = [&](const Owner& o) {
    const std::string& param = s.params[o.param].name;
    if (o.state < 0) return fmt::format("parameter {}", quote(param));
    return fmt::format("state {} of parameter {}", quote(s.optimizer[static_cast<std::size_t>(o.state)]), quote(param));
  };
  std::map<std::string, Owner> zero0;  // ZeRO 0: every parameter and each of its states
  for (std::size_t i = 0; i < s.params.size(); ++i) zero0.emplace(s.params[i].name, Owner{i, -1});
  for (std::size_t i = 0; i < s.params.size(); ++i)
    for (std::size_t k = 0; k < s.optimizer.size(); ++k) {
      const Owner owner{i, static_cast<int>(k)};
      const auto [it, fresh] = zero0.emplace(fmt::format("optim.{}.{}", s.optimizer[k], s.params[i].name), owner);
      if (!fresh)
        throw Error(fmt::format("state: tensor {} is both {} and {} under ZeRO 0", quote(it->first), text(it->second),
                                text(owner)));
    }
  for (const std::string& state : s.optimizer)  // ZeRO 1 and 2: the parameters and each state's partition
    if (const auto it = zero0.find("optim." + state); it != zero0.end() && it->second.state < 0)
      throw Error(fmt::format("state: tensor {} is both {} and the partition of state {} under ZeRO 1 and 2",
                              quote(it->first), text(it->second), quote(state)));
}

// The fields of `s` and of each parameter, alone.
void check_params(const StateSpec& s) {
  if (s.layers < 1) throw Error(fmt::format("state: {} layers; at least 1 is needed", s.layers));
  if (s.vocab_multiple < 1)
    throw Error(fmt::format("state: vocab_multiple {} must be positive", s.vocab_multiple));
  if (s.params.empty()) throw Error("state: no parameters");
  std::set<std::string> names;
  for (const ParamSpec& p : s.params) {
    const std::string what = fmt::format("state: parameter {}", quote(p.name));
    if (p.name.empty()) throw Error("state: a parameter has no name");
    if (p.shape.empty() && p.split != Split::replicated) throw Error(what + ": a scalar cannot be split");
    std::uint64_t n = 1;
    for (std::int64_t d : p.shape) {
      if (d < 1 || d > kMaxDim) throw Error(fmt::format("{}: dimension {} is out of range [1, 2^40]", what, d));
      if (n > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d) / 16)
        throw Error(what + ": too many elements");
      n *= static_cast<std::uint64_t>(d);
    }
    if (p.split == Split::row && p.shape.size() < 2) throw Error(what + ": a row-parallel tensor needs 2 dimensions");
    if (p.stage == Stage::layer && (p.layer < 0 || p.layer >= s.layers))
      throw Error(fmt::format("{}: layer {} is not in [0, {})", what, p.layer, s.layers));
    if (!names.insert(p.name).second) throw Error(what + ": appears twice");
  }
  check_tensor_names(s);
}

// The numbers in `name`, its runs of digits without leading zeros ("layers.03.w": "3").
std::set<std::string> numbers_in(const std::string& name) {
  std::set<std::string> out;
  for (std::size_t i = 0; i < name.size();) {
    if (name[i] < '0' || name[i] > '9') {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9') ++end;
    while (i + 1 < end && name[i] == '0') ++i;
    out.insert(name.substr(i, end - i));
    i = end;
  }
  return out;
}

}  // namespace

void check_layers(const StateSpec& spec, std::string_view what) {
  std::set<int> held;
  for (const ParamSpec& p : spec.params)
    if (p.stage == Stage::layer) held.insert(p.layer);
  if (held.empty()) {
    if (spec.layers != 1)
      throw Error(fmt::format("{}.layers={} but no tensor belongs to a layer", what, spec.layers));
  } else {
    const int low = *held.begin();
    const int high = *held.rbegin();
    if (low != 0 || high + 1 != spec.layers)
      throw Error(fmt::format("{}.layers={} but the tensors hold {}", what, spec.layers,
                              low == high ? fmt::format("layer {}", low) : fmt::format("layers {}-{}", low, high)));
    int expected = 0;
    for (int layer : held) {
      if (layer != expected)
        throw Error(fmt::format("{}.layers={} but no tensor holds layer {}", what, spec.layers, expected));
      ++expected;
    }
  }
  // A layer parameter's layer against the numbers in its name (where rule tables read it).
  for (std::size_t i = 0; i < spec.params.size(); ++i) {
    const ParamSpec& p = spec.params[i];
    if (p.stage != Stage::layer) continue;
    const std::set<std::string> numbers = numbers_in(p.name);
    if (!numbers.empty() && numbers.count(std::to_string(p.layer)) == 0)
      throw Error(fmt::format("{}.params[{}].layer={} but its name {} does not contain {}", what, i, p.layer,
                              quote(p.name), p.layer));
  }
}

void StateSpec::validate() const {
  check_params(*this);
  check_layers(*this, "state: spec");
}

json to_json(const StateSpec& spec) {
  json params = json::array();
  for (const ParamSpec& p : spec.params) {
    json j{{"name", p.name}, {"shape", p.shape}, {"dtype", dtype_name(p.dtype)},
           {"split", name_of(kSplits, p.split)}, {"stage", name_of(kStages, p.stage)}};
    if (p.stage == Stage::layer) j["layer"] = p.layer;
    params.push_back(std::move(j));
  }
  return {{"layers", spec.layers}, {"vocab_multiple", spec.vocab_multiple}, {"optimizer", spec.optimizer},
          {"optimizer_dtype", dtype_name(spec.optimizer_dtype)}, {"params", std::move(params)}};
}

StateSpec state_spec_from_json(const json& j, std::string_view what) {
  const std::string w(what);
  StateSpec s;
  s.layers = static_cast<int>(int_member(j, "layers", what, 1, 1 << 20));
  s.vocab_multiple = static_cast<int>(int_member(j, "vocab_multiple", what, 1, 1 << 20));
  s.optimizer_dtype = parse_dtype(string_member(j, "optimizer_dtype", what), w + ": optimizer_dtype");
  const json& optimizer = member(j, "optimizer", what);
  if (!optimizer.is_array()) throw Error(w + ": optimizer must be an array of names");
  for (const json& o : optimizer) {
    if (!o.is_string() || o.get<std::string>().empty()) throw Error(w + ": optimizer names must be strings");
    s.optimizer.push_back(o.get<std::string>());
  }
  const json& params = member(j, "params", what);
  if (!params.is_array()) throw Error(w + ": params must be an array");
  for (std::size_t i = 0; i < params.size(); ++i) {
    const json& pj = params[i];
    const std::string pw = fmt::format("{}: params[{}]", what, i);
    ParamSpec p;
    p.name = string_member(pj, "name", pw);
    const json& shape = member(pj, "shape", pw);
    if (!shape.is_array()) throw Error(pw + ": shape must be an array");
    for (const json& d : shape) {
      if (!d.is_number_integer()) throw Error(pw + ": shape must hold integers");
      p.shape.push_back(d.get<std::int64_t>());
    }
    p.dtype = parse_dtype(string_member(pj, "dtype", pw), pw + ": dtype");
    p.split = parse_enum(kSplits, string_member(pj, "split", pw), pw + ": split");
    p.stage = parse_enum(kStages, string_member(pj, "stage", pw), pw + ": stage");
    if (p.stage == Stage::layer) p.layer = static_cast<int>(int_member(pj, "layer", pw, 0, 1 << 20));
    s.params.push_back(std::move(p));
  }
  check_params(s);
  check_layers(s, what);  // "index.json: spec.layers=..."
  return s;
}

RuleTable RuleTable::from_json(const json& j, std::string_view what) {
  RuleTable t;
  t.framework = string_member(j, "framework", what);
  const json& rules = member(j, "rules", what);
  if (!rules.is_array() || rules.empty()) throw Error(fmt::format("{}: rules must be a non-empty array", what));
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string rw = fmt::format("{}: rules[{}]", what, i);
    NamingRule r;
    r.pattern = string_member(rules[i], "match", rw);
    r.split = parse_enum(kSplits, string_member(rules[i], "split", rw), rw + ": split");
    r.stage = parse_enum(kStages, string_member(rules[i], "stage", rw), rw + ": stage");
    try {
      const std::regex compiled(r.pattern);
      if (r.stage == Stage::layer && compiled.mark_count() < 1)
        throw Error(rw + ": a layer rule needs a capture group for the layer number");
    } catch (const std::regex_error& e) {
      throw Error(fmt::format("{}: match {}: {}", rw, quote(r.pattern), e.what()));
    }
    t.rules.push_back(std::move(r));
  }
  return t;
}

RuleTable RuleTable::load_file(const std::string& path) {
  json j;
  try {
    j = json::parse(read_text_file(path, "rule table"));
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  return from_json(j, path);
}

StateSpec apply_rules(const RuleTable& table, const std::vector<NamedTensor>& tensors, int layers,
                      std::vector<std::string> optimizer, Dtype optimizer_dtype, int vocab_multiple) {
  StateSpec s;
  s.layers = layers;
  s.vocab_multiple = vocab_multiple;
  s.optimizer = std::move(optimizer);
  s.optimizer_dtype = optimizer_dtype;
  std::vector<std::regex> patterns;
  for (const NamingRule& r : table.rules) patterns.emplace_back(r.pattern);
  for (const NamedTensor& t : tensors) {
    ParamSpec p;
    p.name = t.name;
    p.shape = t.shape;
    p.dtype = t.dtype;
    bool matched = false;
    for (std::size_t i = 0; i < patterns.size() && !matched; ++i) {
      std::smatch m;
      if (!std::regex_match(t.name, m, patterns[i])) continue;
      matched = true;
      p.split = table.rules[i].split;
      p.stage = table.rules[i].stage;
      if (p.stage == Stage::layer)
        p.layer = static_cast<int>(parse_int(m[1].str(), fmt::format("layer of {}", quote(t.name)), 0, 1 << 20));
    }
    if (!matched) throw Error(fmt::format("{} rules: no rule matches parameter {}", table.framework, quote(t.name)));
    s.params.push_back(std::move(p));
  }
  s.validate();
  return s;
}

}  // namespace morph::state
