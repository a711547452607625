#include "tests/trainer/model_spec.h"

#include <cstdint>
#include <vector>

namespace morph::trainer {

state::StateSpec make_spec(const ModelSizes& m) {
  using state::Split;
  using state::Stage;
  const std::int64_t h = m.hidden;
  const std::int64_t v = m.vocab;
  state::StateSpec s;
  s.layers = m.layers;
  s.vocab_multiple = m.vocab_multiple;
  s.optimizer = {"exp_avg", "exp_avg_sq"};
  s.optimizer_dtype = state::Dtype::f64;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, Split split, Stage stage, int layer = -1) {
    s.params.push_back({std::move(name), std::move(shape), state::Dtype::f64, split, stage, layer});
  };
  add("embedding.word_embeddings.weight", {v, h}, Split::vocab, Stage::first);
  for (int l = 0; l < m.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "post_attention_layernorm.weight", {h}, Split::replicated, Stage::layer, l);
    add(p + "mlp.dense_h_to_4h.weight", {4 * h, h}, Split::column, Stage::layer, l);
    add(p + "mlp.dense_h_to_4h.bias", {4 * h}, Split::column, Stage::layer, l);
    add(p + "mlp.dense_4h_to_h.weight", {h, 4 * h}, Split::row, Stage::layer, l);
    add(p + "mlp.dense_4h_to_h.bias", {h}, Split::replicated, Stage::layer, l);
  }
  add("final_layernorm.weight", {h}, Split::replicated, Stage::last);
  add("output_layer.weight", {v, h}, Split::vocab, Stage::last);
  s.validate();
  return s;
}

}  // namespace morph::trainer
