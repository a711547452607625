// Checkpoint on a signal (e.g. SIGUSR2 from `scancel --signal=USR2` or mpirun): the
// handler only sets a flag; at the end of each step the ranks agree (all-reduce) whether
// any received it, so all save the same step.
#pragma once

#include <mpi.h>

namespace morph::trainer {

void install_checkpoint_signal(int signal);
// Collective over `comm`: true when any rank has received the signal.
bool checkpoint_requested(MPI_Comm comm);

}  // namespace morph::trainer
