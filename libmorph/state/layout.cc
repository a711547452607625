#include "libmorph/state/layout.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::state {

RankCoords coords_of(const Layout& l, int rank) {
  if (rank < 0 || rank >= l.ranks()) throw Error(fmt::format("rank {} is not in [0, {})", rank, l.ranks()));
  return {(rank / l.tp) % l.dp, rank % l.tp, rank / (l.tp * l.dp)};
}

int rank_of(const Layout& l, RankCoords c) { return c.pp * l.tp * l.dp + c.dp * l.tp + c.tp; }

Layout layout_of(const ExecutionPlan& p) { return {p.dp, p.tp, p.pp, p.zero_stage}; }

Layout parse_layout(std::string_view text, std::string_view what) {
  Layout l;
  for (const auto& [key, value] : parse_key_values(text, ',', what)) {
    const std::string w = fmt::format("{} {}", what, key);
    if (key == "dp") l.dp = static_cast<int>(parse_int(value, w, 1, 1 << 20));
    else if (key == "tp") l.tp = static_cast<int>(parse_int(value, w, 1, 1 << 20));
    else if (key == "pp") l.pp = static_cast<int>(parse_int(value, w, 1, 1 << 20));
    else if (key == "zero") l.zero = static_cast<int>(parse_int(value, w, 0, 3));
    else throw Error(fmt::format("{}: unknown key {} (dp, tp, pp, zero)", what, quote(key)));
  }
  if (static_cast<long>(l.dp) * l.tp * l.pp > (1 << 20)) throw Error(fmt::format("{}: too many ranks", what));
  return l;
}

std::string to_string(const Layout& l) { return fmt::format("dp={},tp={},pp={},zero={}", l.dp, l.tp, l.pp, l.zero); }

nlohmann::json to_json(const Layout& l) { return {{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"zero", l.zero}}; }

Layout layout_from_json(const nlohmann::json& j, std::string_view what) {
  if (!j.is_object()) throw Error(fmt::format("{}: layout must be an object", what));
  std::string text;
  for (const char* key : {"dp", "tp", "pp", "zero"}) {
    if (!j.contains(key) || !j.at(key).is_number_integer())
      throw Error(fmt::format("{}: layout.{} must be an integer", what, key));
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", key, j.at(key).get<long long>());
  }
  return parse_layout(text, fmt::format("{}: layout", what));
}

int first_layer(const StateSpec& spec, const Layout& l, int stage) {
  return static_cast<int>(static_cast<long>(spec.layers) * stage / l.pp);
}

int end_layer(const StateSpec& spec, const Layout& l, int stage) { return first_layer(spec, l, stage + 1); }

bool stage_owns(const StateSpec& spec, const Layout& l, const ParamSpec& p, int stage) {
  switch (p.stage) {
    case Stage::layer: return p.layer >= first_layer(spec, l, stage) && p.layer < end_layer(spec, l, stage);
    case Stage::first: return stage == 0;
    case Stage::last: return stage == l.pp - 1;
    case Stage::first_and_last: return stage == 0 || stage == l.pp - 1;
  }
  return false;
}

std::int64_t padded_rows(const StateSpec& spec, std::int64_t rows, int tp) {
  const std::int64_t multiple = static_cast<std::int64_t>(spec.vocab_multiple) * tp;
  return (rows + multiple - 1) / multiple * multiple;
}

void check_layout(const StateSpec& spec, const Layout& l) {
  spec.validate();
  if (l.dp < 1 || l.tp < 1 || l.pp < 1) throw Error(fmt::format("layout {}: sizes must be positive", to_string(l)));
  if (l.zero < 0 || l.zero > 3) throw Error(fmt::format("layout {}: ZeRO stage must be 0 to 3", to_string(l)));
  if (l.pp > spec.layers)
    throw Error(fmt::format("layout {}: {} pipeline stages for {} layers", to_string(l), l.pp, spec.layers));
  for (const ParamSpec& p : spec.params) {
    const int dim = p.split == Split::row ? 1 : 0;
    if (p.split == Split::replicated || p.split == Split::vocab) continue;
    if (p.shape[static_cast<std::size_t>(dim)] % l.tp != 0)
      throw Error(fmt::format("layout {}: tp={} does not divide dimension {} ({}) of {}", to_string(l), l.tp, dim,
                              p.shape[static_cast<std::size_t>(dim)], quote(p.name)));
  }
}

}  // namespace morph::state
