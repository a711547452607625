#include "profiler/mpi_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "profiler/size_sweep.h"

namespace morph::hw {
namespace {

constexpr int kWarmupRounds = 2;
constexpr int kTag = 4242;

}  // namespace

void quiet_barrier(MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::vector<BandwidthRow> mpi_pingpong(MPI_Comm world, int rank_a, int rank_b, const SweepOptions& sweep,
                                       const std::string& scope) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const std::size_t max_bytes = *std::max_element(sweep.sizes.begin(), sweep.sizes.end());
  std::vector<char> buffer(rank == rank_a || rank == rank_b ? max_bytes : 0, 1);
  std::vector<double> one_way_s(sweep.sizes.size(), 0.0);
  for (std::size_t k = 0; k < sweep.sizes.size(); ++k) {
    const std::vector<int> parts = mpi_message_parts(sweep.sizes[k]);  // a 2G or 4G count overflows an int
    quiet_barrier(world);
    if (rank != rank_a && rank != rank_b) continue;
    const int peer = rank == rank_a ? rank_b : rank_a;
    auto send = [&] {
      char* at = buffer.data();
      for (int part : parts) {
        MPI_Send(at, part, MPI_BYTE, peer, kTag, world);
        at += part;
      }
    };
    auto receive = [&] {
      char* at = buffer.data();
      for (int part : parts) {
        MPI_Recv(at, part, MPI_BYTE, peer, kTag, world, MPI_STATUS_IGNORE);
        at += part;
      }
    };
    double start = 0;
    for (int i = -kWarmupRounds; i < sweep.iterations; ++i) {
      if (i == 0) start = MPI_Wtime();
      if (rank == rank_a) {
        send();
        receive();
      } else {
        receive();
        send();
      }
    }
    if (rank == rank_a) one_way_s[k] = (MPI_Wtime() - start) / (2.0 * sweep.iterations);
  }
  std::vector<double> at_root(one_way_s.size(), 0.0);
  MPI_Reduce(one_way_s.data(), at_root.data(), static_cast<int>(one_way_s.size()), MPI_DOUBLE, MPI_MAX, 0, world);
  std::vector<BandwidthRow> rows;
  if (rank != 0) return rows;
  for (std::size_t k = 0; k < sweep.sizes.size(); ++k)
    rows.push_back(make_row("MPI", Collective::point_to_point, scope, 2, sweep.sizes[k], at_root[k]));
  return rows;
}

std::vector<BandwidthRow> mpi_allreduce(MPI_Comm comm, const SweepOptions& sweep, const std::string& scope) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::size_t max_floats = *std::max_element(sweep.sizes.begin(), sweep.sizes.end()) / sizeof(float);
  std::vector<float> send(max_floats, 1.0f), receive(max_floats, 0.0f);
  std::vector<double> time_s(sweep.sizes.size(), 0.0);
  for (std::size_t k = 0; k < sweep.sizes.size(); ++k) {
    const int count = static_cast<int>(sweep.sizes[k] / sizeof(float));
    MPI_Barrier(comm);
    double start = 0;
    for (int i = -kWarmupRounds; i < sweep.iterations; ++i) {
      if (i == 0) start = MPI_Wtime();
      MPI_Allreduce(send.data(), receive.data(), count, MPI_FLOAT, MPI_SUM, comm);
    }
    time_s[k] = (MPI_Wtime() - start) / sweep.iterations;
  }
  std::vector<double> slowest(time_s.size(), 0.0);
  MPI_Reduce(time_s.data(), slowest.data(), static_cast<int>(time_s.size()), MPI_DOUBLE, MPI_MAX, 0, comm);
  std::vector<BandwidthRow> rows;
  if (rank != 0) return rows;
  for (std::size_t k = 0; k < sweep.sizes.size(); ++k)
    rows.push_back(make_row("MPI", Collective::allreduce, scope, size, sweep.sizes[k] / sizeof(float) * sizeof(float), slowest[k]));
  return rows;
}

}  // namespace morph::hw
