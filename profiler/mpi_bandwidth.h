// MPI bandwidth over host memory: ping-pong between two ranks and allreduce in a communicator.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <mpi.h>

#include "profiler/bus_bandwidth.h"

namespace morph::hw {

struct SweepOptions {
  std::vector<std::size_t> sizes;  // bytes per message
  int iterations = 20;             // timed, after 2 untimed warm-up rounds
};

// A barrier that sleeps while it waits, so that ranks outside a test leave the CPUs to the
// ranks inside it (emulated nodes and oversubscribed hosts share cores).
void quiet_barrier(MPI_Comm comm);

// Ping-pong between world ranks a and b (a != b); collective over world. The rows (time one
// way, per message) are complete on world rank 0, empty elsewhere.
std::vector<BandwidthRow> mpi_pingpong(MPI_Comm world, int rank_a, int rank_b, const SweepOptions& sweep,
                                       const std::string& scope);

// MPI_Allreduce of floats (sum) in comm; collective over comm; time is the slowest rank's.
// The rows are complete on comm's rank 0.
std::vector<BandwidthRow> mpi_allreduce(MPI_Comm comm, const SweepOptions& sweep, const std::string& scope);

}  // namespace morph::hw
