#include "libmorph/state/dataset_order.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::state {
namespace {

// Everything below is part of the on-disk contract: checkpoints store progress in samples
// and resume by regenerating the permutations, so any change to these functions silently
// reorders the data of every existing run. Only fixed-width unsigned arithmetic is used,
// so the result is the same on every platform and compiler.

// SplitMix64 finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", 2014).
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// SplitMix64 generator: a Weyl sequence with golden-ratio increment, finalised by mix64.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ULL); }

 private:
  std::uint64_t state_;
};

// High and low 64 bits of the 128-bit product a * b, from 32-bit limbs (no __int128).
constexpr std::pair<std::uint64_t, std::uint64_t> mul_64x64(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xffffffffULL, a_hi = a >> 32;
  const std::uint64_t b_lo = b & 0xffffffffULL, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo;
  const std::uint64_t hi_lo = a_hi * b_lo;
  const std::uint64_t lo_hi = a_lo * b_hi;
  const std::uint64_t hi_hi = a_hi * b_hi;
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffULL) + lo_hi;
  const std::uint64_t high = hi_hi + (hi_lo >> 32) + (cross >> 32);
  const std::uint64_t low = (cross << 32) | (lo_lo & 0xffffffffULL);
  return {high, low};
}

// Unbiased integer in [0, bound), bound > 0: Lemire's multiply-shift with rejection
// ("Fast Random Integer Generation in an Interval", ACM TOMACS 2019).
std::uint64_t bounded(SplitMix64& rng, std::uint64_t bound) {
  auto [high, low] = mul_64x64(rng.next(), bound);
  if (low < bound) {
    const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    while (low < threshold) std::tie(high, low) = mul_64x64(rng.next(), bound);
  }
  return high;
}

// One generator per (seed, epoch); mix64 is a bijection, so distinct epochs under one seed
// (and distinct seeds under one epoch) start from distinct states.
SplitMix64 epoch_rng(std::uint64_t seed, std::uint64_t epoch) { return SplitMix64(mix64(mix64(seed) + epoch)); }

}  // namespace

std::vector<std::uint64_t> epoch_permutation(const DatasetOrder& order, std::uint64_t epoch) {
  if (order.samples == 0) throw Error("dataset order: the dataset has 0 samples");
  std::vector<std::uint64_t> permutation(order.samples);
  std::iota(permutation.begin(), permutation.end(), std::uint64_t{0});
  SplitMix64 rng = epoch_rng(order.seed, epoch);
  // Fisher-Yates (Durstenfeld): position i takes a uniform pick from [0, i].
  for (std::uint64_t i = order.samples - 1; i > 0; --i) std::swap(permutation[i], permutation[bounded(rng, i + 1)]);
  return permutation;
}

SampleStream::SampleStream(DatasetOrder order, std::uint64_t global_batch, std::uint64_t progress_samples)
    : order_(order), global_batch_(global_batch), progress_(0) {
  if (order_.samples == 0) throw Error("sample stream: the dataset has 0 samples");
  if (global_batch_ == 0) throw Error("sample stream: the global batch size must be > 0, got 0");
  seek(progress_samples);
}

void SampleStream::seek(std::uint64_t progress_samples) {
  if (progress_samples % global_batch_ != 0)
    throw Error(fmt::format("sample stream: progress of {} samples is not a multiple of the global batch size {}",
                            progress_samples, global_batch_));
  progress_ = progress_samples;
}

void SampleStream::set_global_batch(std::uint64_t global_batch) {
  if (global_batch == 0) throw Error("sample stream: the global batch size must be > 0, got 0");
  global_batch_ = global_batch;
}

std::uint64_t SampleStream::sample_at(std::uint64_t position) {
  const std::uint64_t epoch = position / order_.samples;
  // The emptiness check covers epoch == UINT64_MAX (reachable with 1 sample), the sentinel,
  // and a regeneration that threw after the old permutation was released.
  if (epoch != cached_epoch_ || permutation_.empty()) {
    std::vector<std::uint64_t>().swap(permutation_);  // free the old epoch first: peak memory 1x samples
    permutation_ = epoch_permutation(order_, epoch);
    cached_epoch_ = epoch;
  }
  return permutation_[position % order_.samples];
}

std::vector<std::uint64_t> SampleStream::next_batch() {
  if (progress_ > UINT64_MAX - global_batch_)
    throw Error(fmt::format("sample stream: progress of {} samples cannot advance by {} without overflow", progress_,
                            global_batch_));
  std::vector<std::uint64_t> batch;
  batch.reserve(global_batch_);
  for (std::uint64_t i = 0; i < global_batch_; ++i) batch.push_back(sample_at(progress_ + i));
  progress_ += global_batch_;
  return batch;
}

std::vector<std::uint64_t> SampleStream::rank_block(const std::vector<std::uint64_t>& batch, int rank, int dp) {
  if (dp <= 0) throw Error(fmt::format("rank block: the data-parallel size must be > 0, got {}", dp));
  if (rank < 0 || rank >= dp)
    throw Error(fmt::format("rank block: rank {} is outside [0, {}) for data-parallel size {}", rank, dp, dp));
  const std::size_t size = batch.size();
  const auto d = static_cast<std::size_t>(dp);
  const auto r = static_cast<std::size_t>(rank);
  const std::size_t k = size / d + (size % d != 0 ? 1 : 0);  // ceil(B / d) without overflow
  const std::size_t begin = r * k;  // < B + d: no overflow
  if (begin >= size) return {};      // also covers B == 0
  const std::size_t end = std::min(begin + k, size);
  return {batch.begin() + static_cast<std::ptrdiff_t>(begin), batch.begin() + static_cast<std::ptrdiff_t>(end)};
}

}  // namespace morph::state
