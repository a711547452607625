// The CUDA plumbing that morph-profile's GPU measurements share: an error check that names
// the call, and a stream with two events that times a batch of asynchronous operations.
// Only built with CUDA (profiler/local.mk).
#pragma once

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::hw {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(status)));
}

// Owns one stream and the two events that bracket the timed operations on it.
class StreamTimer {
 public:
  explicit StreamTimer(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~StreamTimer() {
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;

  cudaStream_t stream() const { return stream_; }

  // Seconds per call of `enqueue` (which puts one operation on stream()), over
  // `iterations` calls after `warmup` untimed ones.
  template <class Enqueue>
  double seconds_per_call(Enqueue&& enqueue, int warmup, int iterations) {
    for (int i = 0; i < warmup; ++i) enqueue();
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    for (int i = 0; i < iterations; ++i) enqueue();
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float elapsed_ms = 0;
    check(cudaEventElapsedTime(&elapsed_ms, start_, stop_), "cudaEventElapsedTime");
    return elapsed_ms / 1e3 / iterations;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace morph::hw
