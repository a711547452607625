// Synthetic training states for the resharding tests and benchmark: a GPT-like spec
// (vocabulary-parallel embeddings, column- and row-parallel layers, replicated norms)
// and checkpoints of it whose every global element has a known value.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "libmorph/state/checkpoint.h"
#include "libmorph/state/checksum.h"
#include "libmorph/state/safetensors.h"
#include "libmorph/state/shard_map.h"

namespace morph::test {

struct GptShape {
  int layers = 2;
  std::int64_t hidden = 16;
  std::int64_t vocab = 50;
  bool tied = true;  // the head shares the input embedding (a copy on the last stage)
  int vocab_multiple = 4;
  state::Dtype dtype = state::Dtype::f64;
};

inline state::StateSpec gpt_spec(const GptShape& g) {
  using state::ParamSpec;
  using state::Split;
  using state::Stage;
  const std::int64_t h = g.hidden;
  state::StateSpec s;
  s.layers = g.layers;
  s.vocab_multiple = g.vocab_multiple;
  s.optimizer = {"exp_avg", "exp_avg_sq"};
  s.optimizer_dtype = state::Dtype::f64;
  auto add = [&](std::string name, std::vector<std::int64_t> shape, Split split, Stage stage, int layer = -1) {
    s.params.push_back(ParamSpec{std::move(name), std::move(shape), g.dtype, split, stage, layer});
  };
  add("embedding.word_embeddings.weight", {g.vocab, h}, Split::vocab, g.tied ? Stage::first_and_last : Stage::first);
  add("embedding.position_embeddings.weight", {8, h}, Split::replicated, Stage::first);
  for (int l = 0; l < g.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {h}, Split::replicated, Stage::layer, l);
    add(p + "self_attention.query_key_value.weight", {3 * h, h}, Split::column, Stage::layer, l);
    add(p + "self_attention.query_key_value.bias", {3 * h}, Split::column, Stage::layer, l);
    add(p + "self_attention.dense.weight", {h, h}, Split::row, Stage::layer, l);
    add(p + "self_attention.dense.bias", {h}, Split::replicated, Stage::layer, l);
    add(p + "mlp.dense_h_to_4h.weight", {4 * h, h}, Split::column, Stage::layer, l);
    add(p + "mlp.dense_4h_to_h.weight", {h, 4 * h}, Split::row, Stage::layer, l);
  }
  add("final_layernorm.weight", {h}, Split::replicated, Stage::last);
  if (!g.tied) add("output_layer.weight", {g.vocab, h}, Split::vocab, Stage::last);
  s.validate();
  return s;
}

// The value of element `i` of global tensor `global`: exact in every dtype used here.
inline double global_value(int global, std::uint64_t i) {
  return static_cast<double>(global + 1) * 4096.0 + static_cast<double>(i % 4093);
}

// Writes element values of `t` (its segments: global values or zeros) as `t.decl.dtype`.
inline void fill_local(const state::LocalTensor& t, std::vector<char>& out) {
  const std::size_t element = state::dtype_bytes(t.decl.dtype);
  std::uint64_t n = 0;
  for (const state::Segment& s : t.segments) n += s.count;
  out.assign(n * element, 0);
  std::uint64_t at = 0;
  for (const state::Segment& s : t.segments) {
    for (std::uint64_t k = 0; k < s.count; ++k, ++at) {
      if (s.global < 0) continue;
      const double v = global_value(s.global, s.start + k);
      if (t.decl.dtype == state::Dtype::f64) {
        std::memcpy(out.data() + at * element, &v, element);
      } else {
        const auto f = static_cast<float>(v);
        std::memcpy(out.data() + at * element, &f, element);
      }
    }
  }
}

// A committed checkpoint of `spec` under `layout` holding global_value() everywhere.
inline void write_synthetic_checkpoint(const std::string& dir, const state::StateSpec& spec,
                                       const state::Layout& layout, state::Progress progress = {7, 7 * 64},
                                       const nlohmann::json& trainer = {{"seed", 1}}) {
  state::CheckpointStage stage(dir);
  state::CheckpointIndex index;
  index.layout = layout;
  index.spec = spec;
  index.progress = progress;
  index.trainer = trainer;
  std::vector<char> data;
  for (int r = 0; r < layout.ranks(); ++r) {
    const std::vector<state::LocalTensor> tensors = state::rank_tensors(spec, layout, r);
    std::vector<state::TensorDecl> decls;
    for (const state::LocalTensor& t : tensors) decls.push_back(t.decl);
    const std::string path = stage.file_path(r);
    {
      state::SafetensorsWriter w(path, decls, {{"layout", state::to_string(layout)}, {"rank", std::to_string(r)}});
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        fill_local(tensors[i], data);
        if (!data.empty()) w.write(w.header().tensors[i], 0, data.data(), data.size());
      }
      w.finish();
    }
    state::CheckpointFile f{r, state::rank_file_name(r), 0, state::file_checksum(path)};
    f.bytes = std::filesystem::file_size(path);
    index.files.push_back(f);
  }
  stage.commit(index);
}

}  // namespace morph::test
