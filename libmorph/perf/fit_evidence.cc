#include "libmorph/perf/fit_evidence.h"

#include <cmath>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

// Every member of IterationTerms is written below: a new one changes the size and stops
// the build here until it is saved too.
static_assert(sizeof(IterationTerms) == 136, "IterationTerms changed: save its new member in the evidence");

// Every member but ga_steps, by name: doubles and flags, which `visit` tells apart by type.
template <typename Visit>
void each_term(IterationTerms& x, Visit&& visit) {
  visit("forward_ms", x.forward_ms);
  visit("unpipelined_forward_ms", x.unpipelined_forward_ms);
  visit("model_parallel", x.model_parallel);
  visit("checkpointing", x.checkpointing);
  visit("dp_ms", x.dp_ms);
  visit("tp_ms", x.tp_ms);
  visit("pp_ms", x.pp_ms);
  visit("gather_ms", x.gather_ms);
  visit("tail_share", x.tail_share);
  visit("dp_net", x.dp_net);
  visit("tp_net", x.tp_net);
  visit("pp_net", x.pp_net);
  visit("odd_ring", x.odd_ring);
  visit("stage_passes", x.stage_passes);
  visit("offload", x.offload);
  visit("opt_mparams", x.opt_mparams);
  visit("opt_off_mparams_per_cpu", x.opt_off_mparams_per_cpu);
  visit("model_mparams", x.model_mparams);
  visit("off_ms", x.off_ms);
}

// Terms added after evidence was first saved: missing from older evidence, they load as 0,
// which is how the model that saved it counted them.
bool added_later(std::string_view key) { return key == "stage_passes"; }

double number_at(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) throw Error(fmt::format("{}: {} is missing or not a number", where, key));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) throw Error(fmt::format("{}: {}={} must be finite and >= 0", where, key, v));
  return v;
}

}  // namespace

nlohmann::json evidence_to_json(const FitEvidence& evidence) {
  nlohmann::json points = nlohmann::json::array();
  for (const MeasuredPoint& p : evidence) {
    IterationTerms x = p.terms;
    nlohmann::json terms;
    each_term(x, [&](const char* key, auto& v) { terms[key] = v; });
    terms["ga_steps"] = x.ga_steps;
    points.push_back({{"label", p.label},
                      {"iter_ms", p.iter_ms},
                      {"backward_sync_ms", p.backward_sync_ms},
                      {"optimizer_ms", p.optimizer_ms},
                      {"terms", terms}});
  }
  return points;
}

FitEvidence evidence_from_json(const nlohmann::json& points, const std::string& what) {
  if (!points.is_array()) throw Error(fmt::format("{}: evidence must be an array of points", what));
  FitEvidence evidence;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const nlohmann::json& p = points[i];
    const std::string where = fmt::format("{}: evidence point {}", what, i + 1);
    if (!p.is_object() || !p.contains("terms") || !p["terms"].is_object())
      throw Error(fmt::format("{}: must be an object with its terms", where));
    MeasuredPoint m;
    m.label = p.value("label", "");
    m.iter_ms = number_at(p, "iter_ms", where);
    m.backward_sync_ms = number_at(p, "backward_sync_ms", where);
    m.optimizer_ms = number_at(p, "optimizer_ms", where);
    const nlohmann::json& terms = p["terms"];
    each_term(m.terms, [&](const char* key, auto& v) {
      if constexpr (std::is_same_v<std::remove_reference_t<decltype(v)>, bool>) {
        if (!terms.contains(key) || !terms[key].is_boolean())
          throw Error(fmt::format("{}: {} is missing or not true/false", where, key));
        v = terms[key].get<bool>();
      } else {
        v = !terms.contains(key) && added_later(key) ? 0.0 : number_at(terms, key, where);
      }
    });
    const double steps = number_at(terms, "ga_steps", where);
    if (steps < 1 || steps != std::floor(steps) || steps > 1e6)
      throw Error(fmt::format("{}: ga_steps={} must be a whole number >= 1", where, steps));
    m.terms.ga_steps = static_cast<int>(steps);
    if (!(m.iter_ms > 0) || !(m.terms.forward_ms > 0))
      throw Error(fmt::format("{}: iter_ms and forward_ms must be positive", where));
    if (m.terms.tail_share > 1) throw Error(fmt::format("{}: tail_share={} exceeds 1", where, m.terms.tail_share));
    evidence.push_back(std::move(m));
  }
  return evidence;
}

}  // namespace morph
