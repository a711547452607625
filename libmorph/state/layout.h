// How a state is parallelised: data, tensor and pipeline parallel sizes and the ZeRO
// stage, with Megatron-LM's rank order (TP innermost): rank = pp_rank (t d) + dp_rank t +
// tp_rank.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "libmorph/plan/plan.h"
#include "libmorph/state/state_spec.h"

namespace morph::state {

struct Layout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int zero = 0;  // 0: none; 1, 2: optimizer states partitioned over DP; 3: parameters too

  int ranks() const { return dp * tp * pp; }
  friend bool operator==(const Layout&, const Layout&) = default;
};

struct RankCoords {
  int dp = 0;
  int tp = 0;
  int pp = 0;
};

RankCoords coords_of(const Layout& layout, int rank);
int rank_of(const Layout& layout, RankCoords c);

// The layout a plan trains in: what morphrun reports with each iteration and morphd
// matches observations to plans by.
Layout layout_of(const ExecutionPlan& plan);

// "dp=4,tp=2,pp=1,zero=1" (missing keys are 1, zero 0); throws morph::Error naming `what`.
Layout parse_layout(std::string_view text, std::string_view what);
std::string to_string(const Layout& layout);
nlohmann::json to_json(const Layout& layout);
Layout layout_from_json(const nlohmann::json& j, std::string_view what);

// First and one-past-last layer of pipeline stage `stage`: layers l s / p .. l (s+1) / p.
int first_layer(const StateSpec& spec, const Layout& layout, int stage);
int end_layer(const StateSpec& spec, const Layout& layout, int stage);
bool stage_owns(const StateSpec& spec, const Layout& layout, const ParamSpec& param, int stage);

// Rows of a vocabulary-parallel tensor after padding, for `tp` ranks.
std::int64_t padded_rows(const StateSpec& spec, std::int64_t rows, int tp);

// Throws morph::Error when `spec` cannot be laid out so (a split dimension that t does
// not divide, more stages than layers, a ZeRO stage out of range).
void check_layout(const StateSpec& spec, const Layout& layout);

}  // namespace morph::state
