// Bandwidth figures of one timed collective or transfer, in nccl-tests' conventions.
#pragma once

#include <cstddef>
#include <string>

namespace morph::hw {

enum class Collective { point_to_point, allreduce, allgather, host_to_device, device_to_host };

// algbw = bytes / time. bytes is the message size per rank: the buffer reduced by allreduce,
// the whole gathered buffer of allgather, one message of a ping-pong.
inline double algbw_GBps(std::size_t bytes, double time_s) { return static_cast<double>(bytes) / time_s / 1e9; }

// busbw, comparable with the hardware's link bandwidth whatever the rank count n:
// allreduce algbw * 2(n-1)/n, allgather algbw * (n-1)/n, transfers and ping-pong algbw.
inline double busbw_GBps(Collective c, std::size_t bytes, double time_s, int ranks) {
  const double n = ranks;
  switch (c) {
    case Collective::allreduce: return algbw_GBps(bytes, time_s) * 2 * (n - 1) / n;  // nccl-tests PERFORMANCE.md
    case Collective::allgather: return algbw_GBps(bytes, time_s) * (n - 1) / n;      // nccl-tests PERFORMANCE.md
    default: return algbw_GBps(bytes, time_s);
  }
}

const char* to_string(Collective c);

// One row of the report: a test, where it ran, a size and its timing.
struct BandwidthRow {
  std::string library;  // MPI, CUDA, NCCL
  Collective collective = Collective::point_to_point;
  std::string scope;    // intra (inside a node), inter (across nodes), pcie
  int ranks = 0;
  std::size_t bytes = 0;
  double time_s = 0;    // per iteration (ping-pong: one way)
  double algbw_GBps = 0;
  double busbw_GBps = 0;
};

BandwidthRow make_row(std::string library, Collective c, std::string scope, int ranks, std::size_t bytes,
                      double time_s);

}  // namespace morph::hw
