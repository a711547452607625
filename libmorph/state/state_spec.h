// What a training state is, independent of how it is parallelised (Tenplex's
// parallelizable tensor collection, seed 003 §4): named global tensors, each with a rule
// saying how tensor parallelism splits it and which pipeline stage owns it, plus the
// optimizer states every parameter carries. Framework naming conventions live in rule
// tables (share/morph/rules/*.json), so another framework is another table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "libmorph/state/dtype.h"

namespace morph::state {

// The largest tensor dimension a spec may declare (and padded_rows() may be asked of).
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

enum class Split {
  replicated,  // every tensor-parallel rank holds all of it
  column,      // split along dim 0 (Megatron column-parallel weights and biases)
  row,         // split along dim 1 (row-parallel weights)
  vocab,       // split along dim 0 after padding dim 0 to a multiple of vocab_multiple * t
};

enum class Stage {
  layer,           // the pipeline stage that owns the parameter's layer
  first,           // the first stage (input embeddings)
  last,            // the last stage (final norm, head)
  first_and_last,  // both (tied embeddings: a copy on the last stage)
};

struct ParamSpec {
  std::string name;
  std::vector<std::int64_t> shape;  // global, unpadded
  Dtype dtype = Dtype::f64;
  Split split = Split::replicated;
  Stage stage = Stage::layer;
  int layer = -1;  // with Stage::layer

  std::uint64_t elements() const;
};

struct StateSpec {
  std::vector<ParamSpec> params;         // the order of flattened (ZeRO) partitions
  std::vector<std::string> optimizer;    // per-parameter states, e.g. exp_avg, exp_avg_sq
  Dtype optimizer_dtype = Dtype::f64;
  int layers = 0;
  int vocab_multiple = 128;

  // Throws morph::Error naming the parameter when a rule does not fit its shape, and
  // as check_layers() does.
  void validate() const;
};

// `spec.layers` against the layers its parameters hold (0 to layers - 1, none empty), and
// each layer parameter's layer against the numbers in its name, when it holds any (rule
// tables read the layer there). Errors name the field after `what`, the spec's source:
// "index.json: spec" gives "index.json: spec.layers=3 but the tensors hold layers 0-1".
void check_layers(const StateSpec& spec, std::string_view what);

nlohmann::json to_json(const StateSpec& spec);
// `what` names the source (an index.json's "PATH: spec") in errors.
StateSpec state_spec_from_json(const nlohmann::json& j, std::string_view what);

// A framework's naming convention: the first rule whose pattern (ECMAScript regex, the
// whole name) matches a parameter gives its split and stage; a "layer" rule takes the
// layer number from the pattern's first capture group.
struct NamingRule {
  std::string pattern;
  Split split = Split::replicated;
  Stage stage = Stage::layer;
};

struct RuleTable {
  std::string framework;
  std::vector<NamingRule> rules;

  static RuleTable load_file(const std::string& path);
  static RuleTable from_json(const nlohmann::json& j, std::string_view what);
};

struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  Dtype dtype = Dtype::f64;
};

// The spec of `tensors` under `table`; a name no rule matches is an error.
StateSpec apply_rules(const RuleTable& table, const std::vector<NamedTensor>& tensors, int layers,
                      std::vector<std::string> optimizer, Dtype optimizer_dtype, int vocab_multiple = 128);

}  // namespace morph::state
