// A kind of GPU: how much memory it has, how fast it computes relative to the others,
// and how its GPUs talk inside a node and to the host.
#pragma once

#include <string>
#include <vector>

namespace morph {

enum class IntraLink { nvlink, pcie };

struct GpuType {
  std::string name;
  std::vector<std::string> aliases;
  double memory_bytes = 0;
  double speed = 1.0;                  // relative compute speed (a100 = 1.0)
  double peak_tflops = 0;              // dense 16-bit peak, for FLOP-based forward estimates
  IntraLink link = IntraLink::nvlink;  // GPU-to-GPU link inside a node
  double link_bandwidth_Bps = 0;       // effective all-reduce bus bandwidth inside a node
  double pcie_bandwidth_Bps = 0;       // GPU <-> host memory, per GPU
  bool bf16 = true;                    // computes in bfloat16 (compute capability 8.0 and later)
};

const char* to_string(IntraLink link);

}  // namespace morph
