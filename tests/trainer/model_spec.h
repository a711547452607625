// The trainer's model as a state spec: a vocabulary-parallel embedding, L residual MLP
// blocks (RMS norm, column-parallel h->4h, row-parallel 4h->h) and a final norm with a
// vocabulary-parallel head, named as in Megatron-LM (share/rules/megatron.json; the MLP
// block's norm is Megatron's post_attention_layernorm, there being no attention). The
// spec's parameter order is the ZeRO flattening order.
#pragma once

#include <string>

#include "libmorph/state/state_spec.h"

namespace morph::trainer {

struct ModelSizes {
  int vocab = 50;
  int hidden = 16;
  int layers = 4;
  int vocab_multiple = 4;
};

// Indices of the parameters in the spec.
struct ParamIds {
  static constexpr int kPerLayer = 5;
  int layers = 0;

  int embedding() const { return 0; }
  int norm(int l) const { return 1 + kPerLayer * l; }
  int w1(int l) const { return 2 + kPerLayer * l; }  // dense_h_to_4h.weight [4h, h], column
  int b1(int l) const { return 3 + kPerLayer * l; }  // dense_h_to_4h.bias [4h], column
  int w2(int l) const { return 4 + kPerLayer * l; }  // dense_4h_to_h.weight [h, 4h], row
  int b2(int l) const { return 5 + kPerLayer * l; }  // dense_4h_to_h.bias [h], replicated
  int final_norm() const { return 1 + kPerLayer * layers; }
  int head() const { return 2 + kPerLayer * layers; }
  int count() const { return 3 + kPerLayer * layers; }
};

state::StateSpec make_spec(const ModelSizes& sizes);

}  // namespace morph::trainer
