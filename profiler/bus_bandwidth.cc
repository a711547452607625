#include "profiler/bus_bandwidth.h"

namespace morph::hw {

const char* to_string(Collective c) {
  switch (c) {
    case Collective::point_to_point: return "pingpong";
    case Collective::allreduce: return "allreduce";
    case Collective::allgather: return "allgather";
    case Collective::host_to_device: return "h2d";
    case Collective::device_to_host: return "d2h";
  }
  return "?";
}

BandwidthRow make_row(std::string library, Collective c, std::string scope, int ranks, std::size_t bytes,
                      double time_s) {
  return {std::move(library), c,  std::move(scope), ranks, bytes, time_s, algbw_GBps(bytes, time_s),
          busbw_GBps(c, bytes, time_s, ranks)};
}

}  // namespace morph::hw
