// Built without CUDA (configure --without-cuda or no CUDA runtime found).
#include "libmorph/util/error.h"
#include "profiler/gpu_bandwidth.h"

namespace morph::hw {

GpuProbe probe_gpus() { return {0, "built without CUDA"}; }

std::vector<BandwidthRow> cuda_pcie_bandwidth(int, const SweepOptions&) {
  throw Error("morph-profile was built without CUDA");
}

}  // namespace morph::hw
