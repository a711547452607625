// DeepSpeed's ZeRO-1/2 gradient buckets as Morph runs them (share/frameworks/deepspeed.json)
// and as the Morphling artifact's runs set them: reduce_bucket_size = allgather_bucket_size,
// overlap_comm on. Both the iteration-time and the memory model read them from here.
#pragma once

namespace morph {

// Elements per bucket (reduce_bucket_size, allgather_bucket_size).
inline constexpr double kZeroBucketElements = 2e8;

// GPU memory the buckets take with overlap_comm: DeepSpeed's documented sizing, 4.5 times
// both buckets of 16-bit elements (9 GB at its default 5e8, 3.6 GB at 2e8).
inline constexpr double kZeroBucketBufferBytes = 4.5 * 2 * kZeroBucketElements * 2;

}  // namespace morph
