#include "tests/trainer/collective.h"

namespace morph::trainer {

void agree(const std::string& error, MPI_Comm comm) {
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  int mine = error.empty() ? size : me;
  int lowest = size;
  MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm);
  if (lowest == size) return;
  if (lowest == me) throw CollectiveError(error);
  throw PeerFailure();
}

}  // namespace morph::trainer
