// A transformer model as the memory and performance models see it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace morph {

struct ModelSpec {
  std::string name;
  std::int64_t layers = 0;   // l
  std::int64_t hidden = 0;   // h
  std::int64_t heads = 0;    // a
  std::int64_t seq_len = 0;  // s, the default sequence length of a job
  std::int64_t vocab = 0;    // V (0 for models without a token embedding, e.g. ViT)
  double params = 0;         // W, total parameter count
  // Key/value heads of grouped-query attention; 0: as many as `heads` (multi-head). The
  // memory and performance models count attention as multi-head; Megatron-LM splits the
  // query groups over tensor parallelism, so tp must divide them.
  std::int64_t kv_heads = 0;

  // Parameters of one transformer layer, consistent with `params`:
  // (W - Vh) / l, which is 12h^2 + 13h when W comes from the Frenzy formula.
  double params_per_layer() const;
  double embedding_params() const { return static_cast<double>(vocab) * static_cast<double>(hidden); }
  std::int64_t query_groups() const { return kv_heads > 0 ? kv_heads : heads; }
};

// Frenzy §IV-A: W = Vh + l(12h^2 + 13h).
double frenzy_parameter_count(std::int64_t layers, std::int64_t hidden, std::int64_t vocab);

// Forward FLOPs of one sample of `seq_len` tokens: 2 W s for the matrix products plus
// 4 l s^2 h for attention scores and values (Narayanan et al., SC'21, eq. 3 halved).
double forward_flops_per_sample(const ModelSpec& model, std::int64_t seq_len);

// Checks ranges and consistency (hidden divisible by heads, ...); throws morph::Error
// naming `what` and the offending field.
void validate_model(const ModelSpec& model, std::string_view what);

// "layers=32,hidden=4096,heads=32,seq=4096,vocab=32000[,params=6.7e9][,name=x]".
ModelSpec parse_inline_model(std::string_view spec, std::string_view what);

}  // namespace morph
