// Whether a task can join its step's MPI world. MPI_Init learns the world from the PMIx
// or PMI server of srun --mpi=pmix (or pmi2), or from Open MPI's own launcher (mpirun).
// srun without --mpi where Slurm's MpiDefault is none starts neither, and Open MPI then
// aborts inside MPI_Init with a message that names neither the caller nor the cause.
#pragma once

#include "libmorph/launch/step_layout.h"

namespace morph::launcher {

// True when `env` holds PMIX_RANK, PMI_RANK, PMI_FD or OMPI_COMM_WORLD_RANK.
bool has_pmi(const launch::Environment& env);

}  // namespace morph::launcher
