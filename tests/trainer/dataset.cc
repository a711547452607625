#include "tests/trainer/dataset.h"

namespace morph::trainer {

int sample_token(std::uint64_t sample, std::uint64_t seed, int vocab) {
  const auto v = static_cast<std::uint64_t>(vocab);
  return static_cast<int>(((sample % v) * 7919 + seed % v) % v);  // (i * 7919 + seed) mod V, without overflow
}

int target_of(int token, int vocab) {
  return static_cast<int>((static_cast<std::int64_t>(token) * 31 + 17) % vocab);
}

std::vector<MicroBatch> micro_batches(const std::vector<std::uint64_t>& block, int count, std::uint64_t seed,
                                      int vocab) {
  std::vector<MicroBatch> out(static_cast<std::size_t>(count));
  const std::size_t n = block.size();
  const auto m = static_cast<std::size_t>(count);
  std::size_t at = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t size = n / m + (i < n % m ? 1 : 0);
    for (std::size_t k = 0; k < size; ++k, ++at) {
      const int token = sample_token(block[at], seed, vocab);
      out[i].tokens.push_back(token);
      out[i].targets.push_back(target_of(token, vocab));
    }
  }
  return out;
}

}  // namespace morph::trainer
