// A small worker pool for per-file work (checksums, building new files).
#pragma once

#include <cstddef>
#include <functional>

namespace morph::state {

// Runs job(i) for i in [0, n) on `threads` threads (0: one per core); the first failure
// stops the remaining jobs and is rethrown.
void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& job);

}  // namespace morph::state
