// How the reference trainer starts and ends MPI.
//
// Open MPI opens MPI_Finalize with a PMIx fence. Under `srun --mpi=pmix` with Slurm 22.05
// and Debian 12's PMIx that fence sometimes never completes at the end of the trainer's
// step: every rank sleeps in Open MPI's lazy wait for it, both slurmstepds sit idle and
// Slurm's collective never times out (a step that had done all its work waited 540 s;
// docs/launcher.md, Known limits). So the fence is skipped (Open MPI's
// async_mpi_finalize, unless the environment already chooses) and an MPI barrier takes
// its place: no rank tears its connections down before every rank has finished its last
// exchange.
#pragma once

namespace morph::trainer {

// MPI_Init, with async_mpi_finalize set for Open MPI when OMPI_MCA_async_mpi_finalize is unset.
void begin_mpi(int* argc, char*** argv);

// A barrier over MPI_COMM_WORLD, then MPI_Finalize. Every process must call it (after an
// error known to one process only, MPI_Abort instead).
void end_mpi();

}  // namespace morph::trainer
