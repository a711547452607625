// The synthetic dataset: sample i is one token, (i * 7919 + seed) mod V, whose target is
// (token * 31 + 17) mod V. The order in which samples are seen is Morph's SampleStream.
#pragma once

#include <cstdint>
#include <vector>

namespace morph::trainer {

struct MicroBatch {
  std::vector<int> tokens;
  std::vector<int> targets;
  int size() const { return static_cast<int>(tokens.size()); }
};

int sample_token(std::uint64_t sample, std::uint64_t seed, int vocab);
int target_of(int token, int vocab);

// Splits a DP rank's block of samples into `count` contiguous micro-batches whose sizes
// differ by at most one (some may be empty).
std::vector<MicroBatch> micro_batches(const std::vector<std::uint64_t>& block, int count, std::uint64_t seed,
                                      int vocab);

}  // namespace morph::trainer
