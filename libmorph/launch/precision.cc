#include "libmorph/launch/precision.h"

#include <algorithm>

namespace morph::launch {

bool computes_in_bf16(const Cluster& cluster, const Placement& placement) {
  const auto bf16 = [&](const std::string& type) {
    const GpuType* g = type.empty() ? nullptr : cluster.find_gpu_type(type);
    return g == nullptr || g->bf16;
  };
  if (!placement.heterogeneous()) return bf16(placement.gpu_type);
  return std::all_of(placement.groups.begin(), placement.groups.end(),
                     [&](const GpuGroup& g) { return bf16(g.gpu_type); });
}

}  // namespace morph::launch
