// Which samples of the global batch each data-parallel rank processes: equal blocks
// (SampleStream::rank_block), or under JABAS's heterogeneous data parallelism each rank's
// own count, MORPH_LOCAL_BATCH x MORPH_WORKERS x MORPH_GA, which morphrun sets by the
// rank's GPU type (--rank-batch). Either way a step's gradient is the mean over the same
// global batch, so the loss curve does not depend on the split.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

namespace morph::trainer {

class BatchSplit {
 public:
  BatchSplit() = default;  // equal blocks

  // Collective over `dp` (ranks ordered by DP rank): every rank's `mine`, which must add up
  // to `global`; throws morph::Error naming the counts otherwise.
  static BatchSplit gather(std::uint64_t mine, std::uint64_t global, MPI_Comm dp);

  // This DP rank's samples of `batch`.
  std::vector<std::uint64_t> block(const std::vector<std::uint64_t>& batch, int dp_rank, int dp) const;

  bool equal() const { return counts_.empty(); }
  const std::vector<std::uint64_t>& counts() const { return counts_; }

 private:
  std::vector<std::uint64_t> counts_;  // per DP rank; empty: equal blocks
};

}  // namespace morph::trainer
