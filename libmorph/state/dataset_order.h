// The order in which a job sees its samples, independent of its data-parallel size
// (Tenplex, seed 003): one seeded permutation of the dataset per epoch, concatenated
// into one stream; global batch i is stream[i B, (i+1) B); DP rank r of d gets the
// contiguous block [r k, min((r+1) k, B)) of it, k = ceil(B / d). Progress is counted
// in samples, so a job resumed under another d sees the same global batches.
#pragma once

#include <cstdint>
#include <vector>

namespace morph::state {

struct DatasetOrder {
  std::uint64_t samples = 0;  // dataset size, > 0
  std::uint64_t seed = 0;
};

// The permutation of epoch `epoch` (deterministic across platforms and compilers).
std::vector<std::uint64_t> epoch_permutation(const DatasetOrder& order, std::uint64_t epoch);

// Walks the stream from a progress point: the sample indices of each global batch, and
// of one DP rank's block of it.
class SampleStream {
 public:
  // Throws morph::Error when global_batch is 0 or progress_samples is not a multiple of it.
  SampleStream(DatasetOrder order, std::uint64_t global_batch, std::uint64_t progress_samples);

  std::uint64_t progress_samples() const { return progress_; }
  std::uint64_t global_batch() const { return global_batch_; }
  // Adaptive batching: later batches have `global_batch` samples and start where the last
  // one ended (progress need not be a multiple of it). Throws morph::Error on 0.
  void set_global_batch(std::uint64_t global_batch);
  // Goes on from `progress_samples` (a multiple of the global batch, as in the
  // constructor), keeping the epoch's permutation when it stays in that epoch.
  void seek(std::uint64_t progress_samples);
  const DatasetOrder& order() const { return order_; }
  // The next global batch (all B sample indices), advancing the progress by B.
  std::vector<std::uint64_t> next_batch();
  // Rank r's block of a global batch under data parallelism d: ceil(B/d) samples each,
  // the last ranks fewer or none (B = 9, d = 4: 3, 3, 3, 0).
  static std::vector<std::uint64_t> rank_block(const std::vector<std::uint64_t>& batch, int rank, int dp);

 private:
  std::uint64_t sample_at(std::uint64_t position);

  DatasetOrder order_;
  std::uint64_t global_batch_;
  std::uint64_t progress_;
  std::uint64_t cached_epoch_ = UINT64_MAX;
  std::vector<std::uint64_t> permutation_;
};

}  // namespace morph::state
