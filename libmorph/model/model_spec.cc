#include "libmorph/model/model_spec.h"

#include <fmt/format.h>

#include "libmorph/request/option_check.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

constexpr std::int64_t kMaxLayers = MORPH_MAX_LAYERS;
constexpr std::int64_t kMaxHidden = MORPH_MAX_HIDDEN;
constexpr std::int64_t kMaxSeq = MORPH_MAX_SEQ;
constexpr std::int64_t kMaxVocab = MORPH_MAX_VOCAB;
constexpr double kMaxParams = MORPH_MAX_PARAMS;
// A layer's parameters, (W - Vh)/l, relative to a dense transformer layer of the same h
// (12h^2 + 13h). The catalog spans 1.00 (GPT-2) to 1.64 (Qwen2's wide MLP, T5's decoder
// cross-attention). Below half, a layer lacks its attention or its MLP; 64 times is far
// beyond any dense layer, and W was given in other units.
constexpr double kMinLayerRatio = 0.5;
constexpr double kMaxLayerRatio = 64;

}  // namespace

double frenzy_parameter_count(std::int64_t layers, std::int64_t hidden, std::int64_t vocab) {
  const double h = static_cast<double>(hidden);
  // Frenzy §IV-A: W = Vh + l(12h^2 + 13h)
  return static_cast<double>(vocab) * h + static_cast<double>(layers) * (12 * h * h + 13 * h);
}

double ModelSpec::params_per_layer() const {
  return (params - embedding_params()) / static_cast<double>(layers);
}

double forward_flops_per_sample(const ModelSpec& model, std::int64_t seq_len) {
  const double s = static_cast<double>(seq_len);
  return 2 * model.params * s +
         4 * static_cast<double>(model.layers) * s * s * static_cast<double>(model.hidden);
}

void validate_model(const ModelSpec& m, std::string_view what) {
  auto range = [&](std::string_view key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      throw Error(fmt::format("{}: {}={} is out of range [{}, {}]", what, key, v, lo, hi));
  };
  range("layers", m.layers, 1, kMaxLayers);
  range("hidden", m.hidden, 1, kMaxHidden);
  range("heads", m.heads, 1, m.hidden);
  range("seq", m.seq_len, 1, kMaxSeq);
  range("vocab", m.vocab, 0, kMaxVocab);
  if (m.hidden % m.heads != 0)
    throw Error(fmt::format("{}: hidden={} is not divisible by heads={}", what, m.hidden, m.heads));
  if (m.kv_heads != 0) {
    range("kv_heads", m.kv_heads, 1, m.heads);
    if (m.heads % m.kv_heads != 0)
      throw Error(fmt::format("{}: heads={} is not divisible by kv_heads={}", what, m.heads, m.kv_heads));
  }
  if (!(m.params > 0) || m.params > kMaxParams)
    throw Error(fmt::format("{}: params={:g} is out of range (0, {:g}]", what, m.params, kMaxParams));
  if (m.params <= m.embedding_params())
    throw Error(fmt::format("{}: params={:g} does not exceed the embedding (vocab x hidden = {:g})",
                            what, m.params, m.embedding_params()));
  const double dense = frenzy_parameter_count(1, m.hidden, 0);
  const double ratio = m.params_per_layer() / dense;
  if (ratio < kMinLayerRatio || ratio > kMaxLayerRatio)
    throw Error(fmt::format("{}: params={:g} gives {:.4g} parameters per layer, {:.3g} times a transformer layer "
                            "of hidden={} (12h^2 + 13h = {:.0f}); it must be {:g} to {:g} times that",
                            what, m.params, m.params_per_layer(), ratio, m.hidden, dense, kMinLayerRatio,
                            kMaxLayerRatio));
}

ModelSpec parse_inline_model(std::string_view spec, std::string_view what) {
  char error[256];
  const std::string text(spec), label(what);
  morph_model_values v;
  const bool nul = spec.find('\0') != std::string_view::npos;
  if (nul || morph_parse_model_spec(label.c_str(), text.c_str(), &v, error, sizeof error) != 0)
    throw Error(nul ? fmt::format("{}: {} is not a model specification", what, quote(spec))
                                           : std::string(error));
  ModelSpec m;
  m.name = v.name[0] != '\0' ? std::string(v.name) : fmt::format("custom-l{}-h{}", v.layers, v.hidden);
  m.layers = v.layers;
  m.hidden = v.hidden;
  m.heads = v.heads;
  m.seq_len = v.seq;
  m.vocab = v.vocab;
  m.params = v.params > 0 ? v.params : frenzy_parameter_count(m.layers, m.hidden, m.vocab);
  validate_model(m, what);
  return m;
}

}  // namespace morph
