#include "profiler/pcie_link.h"

#include <cmath>
#include <iterator>

namespace morph::hw {
namespace {

// Per-lane payload rate (GB/s) of each generation: 8b/10b up to gen2, 128b/130b from gen3
// (gen6 counted like gen5's encoding, which is what hwloc 2.9 reports).
constexpr double kLaneGBps[] = {0, 2.5 * 8 / 10 / 8, 5.0 * 8 / 10 / 8, 8.0 * 128 / 130 / 8, 16.0 * 128 / 130 / 8,
                                32.0 * 128 / 130 / 8, 64.0 * 128 / 130 / 8};
constexpr int kWidths[] = {16, 8, 4, 2, 1};

}  // namespace

PcieLink pcie_link_from_speed(double bandwidth_GBps) {
  PcieLink link;
  link.bandwidth_GBps = bandwidth_GBps;
  if (!(bandwidth_GBps > 0)) return link;
  for (int width : kWidths)
    for (int gen = 1; gen < static_cast<int>(std::size(kLaneGBps)); ++gen)
      if (std::abs(bandwidth_GBps / width - kLaneGBps[gen]) <= 0.005 * kLaneGBps[gen]) {
        link.generation = gen;
        link.width = width;
        return link;
      }
  return link;
}

}  // namespace morph::hw
