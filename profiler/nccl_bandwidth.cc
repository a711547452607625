#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>

#include "libmorph/util/error.h"
#include "profiler/cuda_timer.h"
#include "profiler/gpu_bandwidth.h"

namespace morph::hw {
namespace {

constexpr int kWarmupRounds = 2;

using hw::check;  // CUDA's, beside NCCL's
void check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) throw Error(fmt::format("NCCL: {}: {}", what, ncclGetErrorString(status)));
}

// Owns the communicator and device buffers of one rank.
class NcclRank {
 public:
  NcclRank(MPI_Comm comm, int device, std::size_t max_bytes) : timer_(device) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    ncclUniqueId id{};
    if (rank_ == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
    check(cudaMalloc(&send_, max_bytes), "cudaMalloc");
    check(cudaMalloc(&receive_, max_bytes), "cudaMalloc");
    check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }
  ~NcclRank() {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (receive_ != nullptr) cudaFree(receive_);
    if (send_ != nullptr) cudaFree(send_);
  }
  NcclRank(const NcclRank&) = delete;
  NcclRank& operator=(const NcclRank&) = delete;

  int size() const { return size_; }

  // Seconds per collective; bytes: the allreduce buffer, or the whole all-gather output.
  double time(Collective c, std::size_t bytes, int iterations) {
    const cudaStream_t stream = timer_.stream();
    auto run = [&] {
      if (c == Collective::allreduce)
        check(ncclAllReduce(send_, receive_, bytes / sizeof(float), ncclFloat, ncclSum, comm_, stream), "ncclAllReduce");
      else
        check(ncclAllGather(send_, receive_, bytes / sizeof(float) / static_cast<std::size_t>(size_), ncclFloat, comm_,
                            stream),
              "ncclAllGather");
    };
    return timer_.seconds_per_call(run, kWarmupRounds, iterations);
  }

 private:
  StreamTimer timer_;  // first: it selects the device the buffers and the communicator use
  int rank_ = 0, size_ = 0;
  ncclComm_t comm_ = nullptr;
  void* send_ = nullptr;
  void* receive_ = nullptr;
};

}  // namespace

bool nccl_built() { return true; }

std::vector<BandwidthRow> nccl_bandwidth(MPI_Comm comm, int device, const SweepOptions& sweep, const std::string& scope) {
  const std::size_t max_bytes = *std::max_element(sweep.sizes.begin(), sweep.sizes.end());
  NcclRank nccl(comm, device, max_bytes);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<BandwidthRow> rows;
  for (Collective c : {Collective::allreduce, Collective::allgather})
    for (std::size_t requested : sweep.sizes) {
      // Whole floats per rank: all-gather moves size x the per-rank part.
      const std::size_t unit = sizeof(float) * static_cast<std::size_t>(c == Collective::allgather ? nccl.size() : 1);
      const std::size_t bytes = std::max(requested / unit, std::size_t{1}) * unit;
      const double local_s = nccl.time(c, bytes, sweep.iterations);
      double slowest_s = 0;
      MPI_Reduce(&local_s, &slowest_s, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
      if (rank == 0) rows.push_back(make_row("NCCL", c, scope, nccl.size(), bytes, slowest_s));
    }
  return rows;
}

}  // namespace morph::hw
