// Built without NCCL (configure --without-nccl, or no NCCL or CUDA found).
#include "libmorph/util/error.h"
#include "profiler/gpu_bandwidth.h"

namespace morph::hw {

bool nccl_built() { return false; }

std::vector<BandwidthRow> nccl_bandwidth(MPI_Comm, int, const SweepOptions&, const std::string&) {
  throw Error("morph-profile was built without NCCL");
}

}  // namespace morph::hw
