// The morph.conf records morph-profile bandwidth writes: the GpuType= and NodeType= records
// of the measured nodes, complete, with the measured bandwidths in place of the configured.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "libmorph/config/morph_conf.h"

namespace morph::hw {

struct MeasuredValue {
  double GBps = 0;
  std::string how;  // for the comment: "peak MPI allreduce busbw across 2 nodes, 1K..64M"
};

// bfloat16 needs compute capability 8.0 (Ampere) or later.
inline constexpr int kBf16ComputeCapability = 80;

struct MeasuredBandwidth {
  std::optional<MeasuredValue> intra;  // B_intra -> GpuType LinkBandwidthGBps
  std::optional<MeasuredValue> inter;  // B_inter -> NodeType NetworkBandwidthGBps
  std::optional<MeasuredValue> pcie;   // B_pcie  -> GpuType PcieBandwidthGBps
  int compute_capability = 0;          // the lowest rank's, major * 10 + minor -> GpuType Bf16; 0: unknown
  std::string not_measured_reason;     // why intra or pcie is missing ("no CUDA device")
};

// node_names: the NodeName= of every measured node (each must be in config). Throws
// morph::Error naming the node and config_path otherwise. The text parses with
// parse_morph_conf on its own and keeps every other key of each record as configured. When
// the nodes have several GPU types, intra, pcie and compute_capability stay as configured.
std::string conf_fragment(const MorphConfig& config, const std::string& config_path,
                          const std::vector<std::string>& node_names, const MeasuredBandwidth& measured);

}  // namespace morph::hw
