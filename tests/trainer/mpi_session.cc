#include "tests/trainer/mpi_session.h"

#include <mpi.h>

#include <cstdlib>

namespace morph::trainer {

void begin_mpi(int* argc, char*** argv) {
  setenv("OMPI_MCA_async_mpi_finalize", "1", /*overwrite=*/0);
  MPI_Init(argc, argv);
}

void end_mpi() {
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}

}  // namespace morph::trainer
