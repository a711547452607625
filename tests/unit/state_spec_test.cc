// State specs from framework naming rules (share/rules/*.json), their JSON form and
// their validation.
#include "libmorph/state/state_spec.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph::state {
namespace {

RuleTable table(const std::string& name) { return RuleTable::load_file(test::source_dir() + "/share/rules/" + name); }

const ParamSpec& param(const StateSpec& s, const std::string& name) {
  for (const ParamSpec& p : s.params)
    if (p.name == name) return p;
  throw Error("no parameter " + name);
}

TEST(RuleTable, MegatronNamesGetTheirSplitAndStage) {
  const std::int64_t h = 1536;
  std::vector<NamedTensor> names{
      {"language_model.embedding.word_embeddings.weight", {50257, h}},
      {"language_model.embedding.position_embeddings.weight", {2048, h}},
      {"language_model.encoder.layers.0.input_layernorm.weight", {h}},
      {"language_model.encoder.layers.0.self_attention.query_key_value.weight", {3 * h, h}},
      {"language_model.encoder.layers.0.self_attention.query_key_value.bias", {3 * h}},
      {"language_model.encoder.layers.0.self_attention.dense.weight", {h, h}},
      {"language_model.encoder.layers.0.self_attention.dense.bias", {h}},
      {"language_model.encoder.layers.11.mlp.dense_h_to_4h.weight", {4 * h, h}},
      {"language_model.encoder.layers.11.mlp.dense_4h_to_h.weight", {h, 4 * h}},
      {"language_model.encoder.layers.11.mlp.dense_4h_to_h.bias", {h}},
      {"language_model.encoder.final_layernorm.weight", {h}},
      {"word_embeddings_for_head.weight", {50257, h}}};
  for (int l = 1; l < 11; ++l)  // a spec holds every layer of the model
    names.push_back({"language_model.encoder.layers." + std::to_string(l) + ".input_layernorm.weight", {h}});
  const StateSpec s = apply_rules(table("megatron.json"), names, 12, {"exp_avg", "exp_avg_sq"}, Dtype::f32);
  EXPECT_EQ(param(s, names[0].name).split, Split::vocab);
  EXPECT_EQ(param(s, names[0].name).stage, Stage::first);
  EXPECT_EQ(param(s, names[1].name).split, Split::replicated);
  EXPECT_EQ(param(s, names[2].name).layer, 0);
  EXPECT_EQ(param(s, names[3].name).split, Split::column);
  EXPECT_EQ(param(s, names[4].name).split, Split::column);
  EXPECT_EQ(param(s, names[5].name).split, Split::row);
  EXPECT_EQ(param(s, names[6].name).split, Split::replicated);
  EXPECT_EQ(param(s, names[7].name).split, Split::column);
  EXPECT_EQ(param(s, names[7].name).layer, 11);
  EXPECT_EQ(param(s, names[8].name).split, Split::row);  // square at t=4: the rule, not the shape, decides
  EXPECT_EQ(param(s, names[9].name).split, Split::replicated);
  EXPECT_EQ(param(s, names[10].name).stage, Stage::last);
  EXPECT_EQ(param(s, names[11].name).split, Split::vocab);
  EXPECT_EQ(param(s, names[11].name).stage, Stage::last);
}

TEST(RuleTable, LlamaNamesAndUnknownNames) {
  const StateSpec s = apply_rules(table("llama-hf.json"),
                                  {{"model.embed_tokens.weight", {32000, 64}},
                                   {"model.layers.3.self_attn.q_proj.weight", {64, 64}},
                                   {"model.layers.3.self_attn.o_proj.weight", {64, 64}},
                                   {"model.layers.3.mlp.down_proj.weight", {64, 172}},
                                   {"lm_head.weight", {32000, 64}},
                                   {"model.layers.0.input_layernorm.weight", {64}},
                                   {"model.layers.1.input_layernorm.weight", {64}},
                                   {"model.layers.2.input_layernorm.weight", {64}}},
                                  4, {"exp_avg", "exp_avg_sq"}, Dtype::f32);
  EXPECT_EQ(param(s, "model.layers.3.self_attn.q_proj.weight").split, Split::column);
  EXPECT_EQ(param(s, "model.layers.3.self_attn.o_proj.weight").split, Split::row);
  EXPECT_EQ(param(s, "model.layers.3.mlp.down_proj.weight").layer, 3);
  try {
    apply_rules(table("llama-hf.json"), {{"model.rotary.inv_freq", {32}}}, 4, {}, Dtype::f32);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.rotary.inv_freq"), std::string::npos) << e.what();
  }
  // A layer index outside the model.
  EXPECT_THROW(apply_rules(table("llama-hf.json"), {{"model.layers.9.mlp.up_proj.weight", {8, 4}}}, 4, {}, Dtype::f32),
               Error);
}

TEST(RuleTable, BadTablesAreRefusedWithTheirPlace) {
  auto error_of = [](const char* text) {
    try {
      RuleTable::from_json(nlohmann::json::parse(text), "t.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(R"({"framework": "x", "rules": [{"match": "^a$", "split": "row", "stage": "layer"}]})")
                .find("capture group"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"framework": "x", "rules": [{"match": "(", "split": "row", "stage": "first"}]})")
                .find("rules[0]"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"framework": "x", "rules": [{"match": "a", "split": "diagonal", "stage": "first"}]})")
                .find("diagonal"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"framework": "x", "rules": []})").find("non-empty"), std::string::npos);
}

TEST(StateSpec, JsonRoundTripAndValidation) {
  StateSpec s;
  s.layers = 2;
  s.optimizer = {"exp_avg"};
  s.params = {{"e", {10, 4}, Dtype::f32, Split::vocab, Stage::first_and_last, -1},
              {"w", {8, 4}, Dtype::bf16, Split::column, Stage::layer, 1},
              {"n", {4}, Dtype::f32, Split::replicated, Stage::layer, 0}};
  EXPECT_NO_THROW(s.validate());
  const StateSpec back = state_spec_from_json(to_json(s), "spec");
  ASSERT_EQ(back.params.size(), 3u);
  EXPECT_EQ(back.params[0].stage, Stage::first_and_last);
  EXPECT_EQ(back.params[1].dtype, Dtype::bf16);
  EXPECT_EQ(back.params[1].layer, 1);
  EXPECT_EQ(back.optimizer, s.optimizer);
  s.params[1].layer = 2;  // only layers 0 and 1 exist
  EXPECT_THROW(s.validate(), Error);
  s.params[1].layer = 1;
  s.params[1].shape = {8, -4};
  EXPECT_THROW(s.validate(), Error);
  s.params[1].shape = {std::int64_t{1} << 40, std::int64_t{1} << 40};  // 2^80 elements
  EXPECT_THROW(s.validate(), Error);
  s.params[1].shape = {8, 4};
  s.params[1].name = "e";
  EXPECT_THROW(s.validate(), Error);
}

// The message validate() gives for `s`, else "" (none).
std::string validate_error(const StateSpec& s) {
  try {
    s.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A spec whose layer count is not the layers its tensors hold saved and resumed, and
// failed only at the first reshard (verify_contents); validate() refuses it now.
TEST(StateSpec, ItsLayersMustBeTheLayersItsTensorsHold) {
  auto spec = [](int layers) {
    StateSpec s;
    s.layers = layers;
    for (int l = 0; l < 2; ++l)
      s.params.push_back({"layers." + std::to_string(l) + ".w", {8, 4}, Dtype::f32, Split::column, Stage::layer, l});
    s.params.push_back({"head", {10, 4}, Dtype::f32, Split::vocab, Stage::last, -1});
    return s;
  };
  EXPECT_EQ(validate_error(spec(2)), "");
  EXPECT_EQ(validate_error(spec(3)), "state: spec.layers=3 but the tensors hold layers 0-1");
  StateSpec gap = spec(3);
  gap.params[1].layer = 2;
  gap.params[1].name = "layers.2.w";
  EXPECT_EQ(validate_error(gap), "state: spec.layers=3 but no tensor holds layer 1");
  StateSpec swapped = spec(2);
  swapped.params.push_back({"layers.1.b", {8}, Dtype::f32, Split::column, Stage::layer, 0});
  EXPECT_EQ(validate_error(swapped), "state: spec.params[3].layer=0 but its name 'layers.1.b' does not contain 0");
  StateSpec no_layer = spec(2);
  no_layer.params.erase(no_layer.params.begin(), no_layer.params.begin() + 2);
  EXPECT_EQ(validate_error(no_layer), "state: spec.layers=2 but no tensor belongs to a layer");
  no_layer.layers = 1;
  EXPECT_EQ(validate_error(no_layer), "");
  // The spec of an index.json names the file and the field.
  try {
    state_spec_from_json(to_json(spec(3)), "ckpt/step_3/index.json: spec");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "ckpt/step_3/index.json: spec.layers=3 but the tensors hold layers 0-1");
  }
  // A rule table's spec (Spec.from_rules in Python) of 3 layers from tensors of 2.
  try {
    apply_rules(table("llama-hf.json"),
                {{"model.layers.0.input_layernorm.weight", {64}}, {"model.layers.1.input_layernorm.weight", {64}}},
                3, {}, Dtype::f32);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "state: spec.layers=3 but the tensors hold layers 0-1");
  }
}

// Review of the state code: with parameters "w" and "optim.m.w" and optimizer ["m"], the
// second parameter and w's state "m" are both tensor "optim.m.w" under ZeRO 0; a file of
// three tensors passed, both read from one, and a reshard wrote the wrong data. Names
// that any layout would store twice are refused, naming both tensors.
TEST(StateSpec, TensorNamesALayoutWouldStoreTwiceAreRefusedNamingBoth) {
  auto spec = [](std::vector<std::string> names, std::vector<std::string> optimizer) {
    StateSpec s;
    s.layers = 1;
    s.optimizer = std::move(optimizer);
    for (std::string& name : names)
      s.params.push_back({std::move(name), {4}, Dtype::f64, Split::replicated, Stage::first, -1});
    return s;
  };
  EXPECT_EQ(validate_error(spec({"w", "optim.m.w"}, {"m"})),
            "state: tensor 'optim.m.w' is both parameter 'optim.m.w' and state 'm' of parameter 'w' under ZeRO 0");
  EXPECT_EQ(validate_error(spec({"w"}, {"m", "v", "m"})), "state: optimizer state 'm' appears twice");
  EXPECT_EQ(validate_error(spec({"w", "optim.v"}, {"m", "v"})),
            "state: tensor 'optim.v' is both parameter 'optim.v' and the partition of state 'v' under ZeRO 1 and 2");
  EXPECT_EQ(validate_error(spec({"b.c", "c"}, {"a", "a.b"})),
            "state: tensor 'optim.a.b.c' is both state 'a' of parameter 'b.c' and state 'a.b' of parameter 'c' under "
            "ZeRO 0");
  EXPECT_EQ(validate_error(spec({"w"}, {""})), "state: an optimizer state has no name");
  // Names no layout stores together: ZeRO 3 keeps no parameter's own name.
  EXPECT_EQ(validate_error(spec({"params.flat", "optim.w"}, {"m"})), "");
}

}  // namespace
}  // namespace morph::state
