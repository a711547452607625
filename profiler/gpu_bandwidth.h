// GPU bandwidth tests: pinned host <-> device copies (CUDA) and collectives (NCCL). Each has
// a real implementation (cuda_bandwidth.cc, nccl_bandwidth.cc) and one for builds without
// the library (*_none.cc), chosen by configure.
#pragma once

#include <string>
#include <vector>

#include <mpi.h>

#include "profiler/mpi_bandwidth.h"

namespace morph::hw {

struct GpuProbe {
  int devices = 0;      // CUDA devices this rank sees
  std::string reason;   // why there is none: "no CUDA device (...)", "built without CUDA"
  int compute_capability = 0;  // the lowest of those devices', major * 10 + minor (80 = 8.0)
};
GpuProbe probe_gpus();

// B_pcie: cudaMallocHost buffers, cudaMemcpyAsync on a stream, timed with events; host to
// device then device to host, on `device`. Throws morph::Error with CUDA's message.
std::vector<BandwidthRow> cuda_pcie_bandwidth(int device, const SweepOptions& sweep);

bool nccl_built();

// NCCL allreduce and all-gather over comm (one GPU per rank: `device`), the ncclUniqueId
// broadcast over MPI from comm's rank 0. Collective over comm; rows complete on its rank 0.
// Throws morph::Error with NCCL's message.
std::vector<BandwidthRow> nccl_bandwidth(MPI_Comm comm, int device, const SweepOptions& sweep,
                                         const std::string& scope);

}  // namespace morph::hw
