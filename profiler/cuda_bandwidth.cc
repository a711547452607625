#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>

#include "libmorph/util/error.h"
#include "profiler/gpu_bandwidth.h"

namespace morph::hw {
namespace {

constexpr int kWarmupCopies = 2;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(status)));
}

// Owns the buffers, stream and events of one transfer test.
class PinnedTransfer {
 public:
  PinnedTransfer(int device, std::size_t bytes) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaMallocHost(&host_, bytes), "cudaMallocHost");
    check(cudaMalloc(&device_, bytes), "cudaMalloc");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~PinnedTransfer() {
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (device_ != nullptr) cudaFree(device_);
    if (host_ != nullptr) cudaFreeHost(host_);
  }
  PinnedTransfer(const PinnedTransfer&) = delete;
  PinnedTransfer& operator=(const PinnedTransfer&) = delete;

  // Seconds per copy of `bytes`.
  double time_copy(std::size_t bytes, bool to_device, int iterations) {
    void* dst = to_device ? device_ : host_;
    const void* src = to_device ? host_ : device_;
    const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    for (int i = 0; i < kWarmupCopies; ++i) check(cudaMemcpyAsync(dst, src, bytes, kind, stream_), "cudaMemcpyAsync");
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    for (int i = 0; i < iterations; ++i) check(cudaMemcpyAsync(dst, src, bytes, kind, stream_), "cudaMemcpyAsync");
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float elapsed_ms = 0;
    check(cudaEventElapsedTime(&elapsed_ms, start_, stop_), "cudaEventElapsedTime");
    return elapsed_ms / 1e3 / iterations;
  }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace

GpuProbe probe_gpus() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return {0, fmt::format("no CUDA device (cudaGetDeviceCount: {})", cudaGetErrorString(status))};
  if (count == 0) return {0, "no CUDA device (cudaGetDeviceCount: 0)"};
  return {count, ""};
}

std::vector<BandwidthRow> cuda_pcie_bandwidth(int device, const SweepOptions& sweep) {
  const std::size_t max_bytes = *std::max_element(sweep.sizes.begin(), sweep.sizes.end());
  PinnedTransfer transfer(device, max_bytes);
  std::vector<BandwidthRow> rows;
  for (bool to_device : {true, false})
    for (std::size_t bytes : sweep.sizes)
      rows.push_back(make_row("CUDA", to_device ? Collective::host_to_device : Collective::device_to_host, "pcie", 1,
                              bytes, transfer.time_copy(bytes, to_device, sweep.iterations)));
  return rows;
}

}  // namespace morph::hw
