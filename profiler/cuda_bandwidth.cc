#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>

#include "profiler/cuda_timer.h"
#include "profiler/gpu_bandwidth.h"

namespace morph::hw {
namespace {

constexpr int kWarmupCopies = 2;

// Owns the pinned host buffer and the device buffer of one transfer test.
class PinnedTransfer {
 public:
  PinnedTransfer(int device, std::size_t bytes) : timer_(device) {
    check(cudaMallocHost(&host_, bytes), "cudaMallocHost");
    check(cudaMalloc(&device_, bytes), "cudaMalloc");
  }
  ~PinnedTransfer() {
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
    return timer_.seconds_per_call(
        [&] { check(cudaMemcpyAsync(dst, src, bytes, kind, timer_.stream()), "cudaMemcpyAsync"); }, kWarmupCopies,
        iterations);
  }

 private:
  StreamTimer timer_;  // first: it selects the device the buffers go to
  void* host_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace

GpuProbe probe_gpus() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return {0, fmt::format("no CUDA device (cudaGetDeviceCount: {})", cudaGetErrorString(status))};
  if (count == 0) return {0, "no CUDA device (cudaGetDeviceCount: 0)"};
  GpuProbe probe{count, "", 0};
  for (int device = 0; device < count; ++device) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      return probe;  // capability unknown: 0
    const int capability = major * 10 + minor;
    probe.compute_capability = device == 0 ? capability : std::min(probe.compute_capability, capability);
  }
  return probe;
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
