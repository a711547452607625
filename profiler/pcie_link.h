// PCIe generation and lane count from hwloc's link speed attribute.
#pragma once

namespace morph::hw {

struct PcieLink {
  double bandwidth_GBps = 0;  // hwloc's linkspeed: lanes * GT/s * encoding / 8
  int generation = 0;         // 0: unknown
  int width = 0;              // lanes; 0: unknown
};

// hwloc gives only the product of the per-lane rate and the lane count, so a gen4 x16 link
// and a gen5 x8 link read the same (31.5 GB/s). The widest standard width (16, 8, 4, 2, 1)
// whose per-lane rate matches a generation within 0.5% wins: GPUs and HCAs are x16 devices.
PcieLink pcie_link_from_speed(double bandwidth_GBps);

}  // namespace morph::hw
