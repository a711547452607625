// Prints "rank R of N on HOST" from every rank: proves srun --mpi=pmix starts Open MPI
// jobs on the test cluster. It ends MPI as the reference trainer does (mpi_session.h:
// Open MPI's finalize fence can hang under Slurm 22.05's PMIx, a known limit of its own).
#include <mpi.h>

#include <cstdio>

#include "tests/trainer/mpi_session.h"

int main(int argc, char** argv) {
  morph::trainer::begin_mpi(&argc, &argv);
  int rank = 0, size = 0, length = 0;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &length);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
  morph::trainer::end_mpi();
  return 0;
}
