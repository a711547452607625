#include "tests/trainer/batch_split.h"

#include <numeric>

#include <fmt/format.h>

#include "libmorph/state/dataset_order.h"
#include "libmorph/util/error.h"

namespace morph::trainer {

BatchSplit BatchSplit::gather(std::uint64_t mine, std::uint64_t global, MPI_Comm dp) {
  int size = 0;
  MPI_Comm_size(dp, &size);
  BatchSplit s;
  s.counts_.resize(static_cast<std::size_t>(size));
  static_assert(sizeof(unsigned long long) == sizeof(std::uint64_t));
  MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, s.counts_.data(), 1, MPI_UNSIGNED_LONG_LONG, dp);
  const std::uint64_t total = std::accumulate(s.counts_.begin(), s.counts_.end(), std::uint64_t{0});
  if (total != global)
    throw Error(fmt::format("--rank-batch: the data-parallel ranks process {} samples ({}), the global batch is {}",
                            total, fmt::join(s.counts_, "+"), global));
  return s;
}

std::vector<std::uint64_t> BatchSplit::block(const std::vector<std::uint64_t>& batch, int dp_rank, int dp) const {
  if (counts_.empty()) return state::SampleStream::rank_block(batch, dp_rank, dp);
  const auto r = static_cast<std::size_t>(dp_rank);
  const auto begin = static_cast<std::ptrdiff_t>(std::accumulate(counts_.begin(), counts_.begin() + r, std::uint64_t{0}));
  return {batch.begin() + begin, batch.begin() + begin + static_cast<std::ptrdiff_t>(counts_[r])};
}

}  // namespace morph::trainer
