// Prints "rank R of N on HOST" from every rank: proves srun --mpi=pmix starts Open MPI
// jobs on the test cluster.
#include <mpi.h>

#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, length = 0;
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &length);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("rank %d of %d on %s sum %d\n", rank, size, host, sum);
  MPI_Finalize();
  return 0;
}
