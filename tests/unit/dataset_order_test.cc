#include "libmorph/state/dataset_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "libmorph/util/error.h"

namespace morph::state {
namespace {

using Indices = std::vector<std::uint64_t>;

bool is_permutation_of_range(const Indices& p, std::uint64_t n) {
  if (p.size() != n) return false;
  std::vector<bool> seen(n, false);
  for (std::uint64_t x : p) {
    if (x >= n || seen[x]) return false;
    seen[x] = true;
  }
  return true;
}

// The rank blocks of d ranks, concatenated in rank order; each rank's block is also checked
// against the contiguous-block rule [r k, min((r+1) k, B)), k = ceil(B / d).
Indices concat_rank_blocks(const Indices& batch, int dp) {
  Indices all;
  const std::size_t k = (batch.size() + static_cast<std::size_t>(dp) - 1) / static_cast<std::size_t>(dp);
  for (int r = 0; r < dp; ++r) {
    const Indices block = SampleStream::rank_block(batch, r, dp);
    const std::size_t begin = std::min(static_cast<std::size_t>(r) * k, batch.size());
    const std::size_t end = std::min(begin + k, batch.size());
    EXPECT_EQ(block.size(), end - begin) << "rank " << r << " of " << dp;
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

TEST(DatasetOrder, EpochPermutationIsAPermutation) {
  for (std::uint64_t n : Indices{1, 2, 3, 7, 10, 64, 1000, 4099})
    for (std::uint64_t seed : Indices{0, 42, UINT64_MAX})
      for (std::uint64_t epoch : Indices{0, 1, 12345, UINT64_MAX})
        EXPECT_TRUE(is_permutation_of_range(epoch_permutation({n, seed}, epoch), n))
            << "n=" << n << " seed=" << seed << " epoch=" << epoch;
}

TEST(DatasetOrder, EpochPermutationIsDeterministic) {
  const DatasetOrder order{1000, 7};
  EXPECT_EQ(epoch_permutation(order, 3), epoch_permutation(order, 3));
  EXPECT_EQ(epoch_permutation(order, 0), epoch_permutation(DatasetOrder{1000, 7}, 0));
}

TEST(DatasetOrder, EpochsAndSeedsGiveDifferentPermutations) {
  const Indices base = epoch_permutation({1000, 7}, 0);
  EXPECT_NE(base, epoch_permutation({1000, 7}, 1));
  EXPECT_NE(base, epoch_permutation({1000, 8}, 0));
  EXPECT_NE(epoch_permutation({1000, 7}, 1), epoch_permutation({1000, 8}, 0));
  Indices identity(1000);
  for (std::uint64_t i = 0; i < identity.size(); ++i) identity[i] = i;
  EXPECT_NE(base, identity);
}

// Regression guard. Checkpoints store progress in samples and resume by regenerating these
// permutations: changing these values (the PRNG, its seeding, the bounded draw or the
// shuffle) silently changes the data order of every existing checkpoint on resumption.
TEST(DatasetOrder, GoldenPermutations) {
  const DatasetOrder order{10, 42};
  EXPECT_EQ(epoch_permutation(order, 0), (Indices{0, 3, 5, 7, 9, 8, 2, 1, 4, 6}));
  EXPECT_EQ(epoch_permutation(order, 1), (Indices{6, 5, 1, 4, 7, 3, 2, 9, 8, 0}));
  const Indices large = epoch_permutation({1000, 7}, 3);
  EXPECT_EQ(Indices(large.begin(), large.begin() + 8), (Indices{260, 4, 5, 391, 687, 520, 642, 38}));
  EXPECT_EQ(epoch_permutation({5, UINT64_MAX}, UINT64_MAX), (Indices{3, 4, 1, 0, 2}));
}

// With a fixed PRNG this is deterministic, not flaky: each of the 6 orders of 3 samples
// should come up about 1000 times in 6000 epochs. A biased draw or an off-by-one in the
// shuffle (e.g. Sattolo's algorithm, which never leaves an element in place) fails it.
TEST(DatasetOrder, SmallPermutationsAreRoughlyUniform) {
  std::map<Indices, int> counts;
  for (std::uint64_t epoch = 0; epoch < 6000; ++epoch) ++counts[epoch_permutation({3, 99}, epoch)];
  EXPECT_EQ(counts.size(), 6U);
  for (const auto& [p, count] : counts) {
    EXPECT_GT(count, 850);
    EXPECT_LT(count, 1150);
  }
}

TEST(DatasetOrder, EmptyDatasetIsRejected) { EXPECT_THROW(epoch_permutation({0, 1}, 0), Error); }

TEST(SampleStream, BatchesAreConsecutiveSlicesOfTheEpochStream) {
  const DatasetOrder order{10, 42};
  SampleStream stream(order, 4, 0);
  Indices expected = epoch_permutation(order, 0);
  for (std::uint64_t e = 1; e < 3; ++e) {
    const Indices p = epoch_permutation(order, e);
    expected.insert(expected.end(), p.begin(), p.end());
  }
  Indices got;
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(stream.progress_samples(), static_cast<std::uint64_t>(i) * 4);
    const Indices batch = stream.next_batch();
    ASSERT_EQ(batch.size(), 4U);
    got.insert(got.end(), batch.begin(), batch.end());
  }
  EXPECT_EQ(stream.progress_samples(), 28U);
  EXPECT_EQ(got, Indices(expected.begin(), expected.begin() + 28));
}

// Adaptive batching (issue 15): a new batch size takes the next samples in order.
TEST(SampleStream, ANewGlobalBatchStartsWhereTheLastEnded) {
  SampleStream adaptive({100, 7}, 8, 0);
  SampleStream fixed({100, 7}, 4, 0);
  std::vector<std::uint64_t> a = adaptive.next_batch();
  adaptive.set_global_batch(12);
  const std::vector<std::uint64_t> b = adaptive.next_batch();
  EXPECT_EQ(b.size(), 12u);
  EXPECT_EQ(adaptive.progress_samples(), 20u);
  EXPECT_EQ(adaptive.global_batch(), 12u);
  a.insert(a.end(), b.begin(), b.end());
  std::vector<std::uint64_t> same;
  for (int i = 0; i < 5; ++i) {
    const auto part = fixed.next_batch();
    same.insert(same.end(), part.begin(), part.end());
  }
  EXPECT_EQ(a, same);
  EXPECT_THROW(adaptive.set_global_batch(0), Error);
}

TEST(SampleStream, BatchCrossesEpochBoundary) {
  const DatasetOrder order{10, 42};
  const Indices e0 = epoch_permutation(order, 0);
  const Indices e1 = epoch_permutation(order, 1);
  SampleStream stream(order, 4, 8);  // positions 8..11: two of epoch 0, two of epoch 1
  EXPECT_EQ(stream.next_batch(), (Indices{e0[8], e0[9], e1[0], e1[1]}));
  EXPECT_EQ(stream.next_batch(), (Indices{e1[2], e1[3], e1[4], e1[5]}));
  // A batch larger than the dataset spans three epochs.
  SampleStream wide({3, 5}, 7, 0);
  const Indices w0 = epoch_permutation({3, 5}, 0), w1 = epoch_permutation({3, 5}, 1), w2 = epoch_permutation({3, 5}, 2);
  EXPECT_EQ(wide.next_batch(), (Indices{w0[0], w0[1], w0[2], w1[0], w1[1], w1[2], w2[0]}));
  // One sample: every batch is all zeros, at any progress.
  SampleStream one({1, 5}, 3, 3000);
  EXPECT_EQ(one.next_batch(), (Indices{0, 0, 0}));
}

TEST(SampleStream, StartsAtAnyProgressAndMatchesAnUninterruptedRun) {
  const DatasetOrder order{37, 11};
  SampleStream full(order, 8, 0);
  std::vector<Indices> batches;
  for (int i = 0; i < 30; ++i) batches.push_back(full.next_batch());
  for (std::uint64_t k = 0; k < 30; ++k) {
    SampleStream resumed(order, 8, k * 8);
    EXPECT_EQ(resumed.next_batch(), batches[k]) << "resumed at batch " << k;
  }
}

// Tenplex: a run at d = 4 interrupted after K batches and resumed at another d sees the
// same global batches, and the ranks' blocks of each one tile it exactly, in rank order.
TEST(SampleStream, ResumeUnderAnotherDataParallelSizeKeepsGlobalBatches) {
  const DatasetOrder order{37, 2024};  // 37 % 12 != 0: batches cross epochs
  const std::uint64_t global_batch = 12;
  const int total = 20;
  SampleStream original(order, global_batch, 0);
  std::vector<Indices> reference;
  for (int i = 0; i < total; ++i) {
    const Indices batch = original.next_batch();
    EXPECT_EQ(concat_rank_blocks(batch, 4), batch);
    reference.push_back(batch);
  }
  for (std::uint64_t k : Indices{1, 3, 7, 13}) {
    for (int dp : {2, 3, 8}) {
      SampleStream resumed(order, global_batch, k * global_batch);
      for (std::uint64_t i = k; i < total; ++i) {
        const Indices batch = resumed.next_batch();
        EXPECT_EQ(batch, reference[i]) << "K=" << k << " d=" << dp << " batch " << i;
        EXPECT_EQ(concat_rank_blocks(batch, dp), batch) << "K=" << k << " d=" << dp << " batch " << i;
      }
      EXPECT_EQ(resumed.progress_samples(), total * global_batch);
    }
  }
}

TEST(SampleStream, RankBlocksAreContiguousCeilSizedSlices) {
  const Indices batch{10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  // d = 4: k = 3, blocks of 3, 3, 3, 1.
  EXPECT_EQ(SampleStream::rank_block(batch, 0, 4), (Indices{10, 11, 12}));
  EXPECT_EQ(SampleStream::rank_block(batch, 1, 4), (Indices{13, 14, 15}));
  EXPECT_EQ(SampleStream::rank_block(batch, 2, 4), (Indices{16, 17, 18}));
  EXPECT_EQ(SampleStream::rank_block(batch, 3, 4), (Indices{19}));
  // d = 1: the whole batch.
  EXPECT_EQ(SampleStream::rank_block(batch, 0, 1), batch);
  // d = 8 <= B = 10: k = 2, so ranks 5..7 get nothing even though d <= B.
  EXPECT_EQ(SampleStream::rank_block(batch, 4, 8), (Indices{18, 19}));
  for (int r = 5; r < 8; ++r) EXPECT_TRUE(SampleStream::rank_block(batch, r, 8).empty()) << "rank " << r;
  EXPECT_EQ(concat_rank_blocks(batch, 8), batch);
}

TEST(SampleStream, RankBlocksWithMoreRanksThanSamples) {
  const Indices batch{7, 8, 9};
  for (int r = 0; r < 3; ++r) EXPECT_EQ(SampleStream::rank_block(batch, r, 8), Indices{batch[static_cast<std::size_t>(r)]});
  for (int r = 3; r < 8; ++r) EXPECT_TRUE(SampleStream::rank_block(batch, r, 8).empty()) << "rank " << r;
  EXPECT_EQ(concat_rank_blocks(batch, 8), batch);
  EXPECT_TRUE(SampleStream::rank_block(Indices{}, 0, 2).empty());
}

TEST(SampleStream, RankBlockRejectsBadRankOrDataParallelSize) {
  const Indices batch{1, 2, 3, 4};
  EXPECT_THROW(SampleStream::rank_block(batch, 0, 0), Error);
  EXPECT_THROW(SampleStream::rank_block(batch, 0, -2), Error);
  EXPECT_THROW(SampleStream::rank_block(batch, -1, 2), Error);
  EXPECT_THROW(SampleStream::rank_block(batch, 2, 2), Error);
  try {
    SampleStream::rank_block(batch, 5, 4);
    FAIL() << "expected morph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos) << e.what();
  }
}

TEST(SampleStream, ConstructorRejectsBadArguments) {
  EXPECT_THROW(SampleStream({0, 1}, 4, 0), Error);
  EXPECT_THROW(SampleStream({10, 1}, 0, 0), Error);
  EXPECT_THROW(SampleStream({10, 1}, 4, 6), Error);
  EXPECT_NO_THROW(SampleStream({10, 1}, 4, 8));
  try {
    SampleStream({10, 1}, 4, 6);
    FAIL() << "expected morph::Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("progress of 6 samples"), std::string::npos) << message;
    EXPECT_NE(message.find("global batch size 4"), std::string::npos) << message;
  }
}

TEST(SampleStream, RefusesToOverflowProgress) {
  const std::uint64_t global_batch = 4;
  const std::uint64_t last = UINT64_MAX / global_batch * global_batch;  // largest valid multiple
  SampleStream stream({10, 1}, global_batch, last - global_batch);
  EXPECT_EQ(stream.next_batch().size(), global_batch);
  EXPECT_EQ(stream.progress_samples(), last);
  EXPECT_THROW(stream.next_batch(), Error);
}

}  // namespace
}  // namespace morph::state
