// Gradient similarity, the signal of JABAS's adaptive batching (seed 004 §5, after
// SimiGrad): the cosine between the mean gradients of two halves of the global batch. A
// high similarity says the halves agree, so a larger batch adds little information and the
// global batch may grow; a low one says the gradient is noisy.
//
// Each rank's half A is its first ceil(M/2) micro-batches, half B the rest: the halves of
// the global batch are the unions over data-parallel ranks.
#pragma once

#include <vector>

#include "libmorph/state/state_spec.h"
#include "tests/trainer/groups.h"
#include "tests/trainer/local_state.h"

namespace morph::trainer {

// Collective over MPI_COMM_WORLD. `half_a`: this rank's gradient of half A (flat, as
// st.grads); st.grads: of its whole block, not yet reduced. Sums both halves over data
// parallelism, then the dot product and norms over the model's shards, counting a
// parameter replicated over tensor-parallel ranks once. 0 when a half has no gradient; within [-1, 1].
double gradient_similarity(const std::vector<double>& half_a, const LocalState& st, const state::StateSpec& spec,
                           const Groups& g);

}  // namespace morph::trainer
