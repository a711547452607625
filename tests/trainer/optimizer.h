// Data-parallel gradient reduction and Adam, with ZeRO: under ZeRO 0 every rank sums all
// gradients over DP and updates all its parameters; under ZeRO 1-3 the flattened
// gradients are reduce-scattered over DP, each rank updates its chunk with its optimizer
// chunk, and the updated chunks are all-gathered back (ZeRO 3 keeps full local parameters
// at run time too; only its checkpoint differs).
#pragma once

#include <mpi.h>

#include <cstdint>

#include "tests/trainer/local_state.h"

namespace morph::trainer {

struct Adam {
  double lr = 1e-2;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// `step` counts from 1 (bias correction); gradients must already be scaled by 1/B.
void optimizer_step(LocalState& st, MPI_Comm dp, const Adam& adam, std::uint64_t step);

}  // namespace morph::trainer
