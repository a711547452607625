// Deterministic initialisation of the GLOBAL model: element i of parameter `name` is a
// function of (seed, name, i) only, so every layout starts from the same model.
#pragma once

#include <cstdint>

#include "libmorph/state/layout.h"
#include "libmorph/state/state_spec.h"
#include "tests/trainer/local_state.h"

namespace morph::trainer {

// Norm weights 1 + 0.1 u, biases 0.02 u, embeddings and head 0.5 u, h->4h sqrt(3 / h) u,
// 4h->h 0.5 sqrt(3 / 4h) u, u uniform in [-1, 1) from a SplitMix64 hash of (seed, name, i).
double init_value(std::uint64_t seed, const state::ParamSpec& param, std::uint64_t index);

// Fills `st.params` with this rank's shards of the global model (padding rows 0) and
// zeroes the optimizer states.
void initialise(LocalState& st, const state::StateSpec& spec, std::uint64_t seed);

// Checks that the trainer's own sharding (LocalState) is the library's (rank_tensors):
// same tensors, local shapes and global element of every local element, and ZeRO chunk
// sizes. Throws morph::Error naming the first difference.
void check_against_shard_map(const LocalState& st, const state::StateSpec& spec, const state::Layout& layout,
                             int rank);

}  // namespace morph::trainer
