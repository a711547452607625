// Carrying out a reshard plan (Tenplex §4.3): every new rank's file is built on its own
// from ranged reads of the old files, so new ranks run in parallel, as threads here or
// as MPI processes (launcher/reshard_mpi.cc), with no central node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/state/checkpoint.h"
#include "libmorph/state/reshard_plan.h"

namespace morph::state {

// An old checkpoint's files, open for ranged reads (pread: thread-safe, positionless), so
// a reshard reads only the ranges it copies (and, when verifying, each file once).
class OldCheckpoint {
 public:
  // Opens every file of `index`; their sizes must match it.
  OldCheckpoint(const std::string& dir, const CheckpointIndex& index);
  ~OldCheckpoint();
  OldCheckpoint(const OldCheckpoint&) = delete;
  OldCheckpoint& operator=(const OldCheckpoint&) = delete;

  // Each file's checksum against the index, with `threads` threads (0: one per core).
  void verify_checksums(int threads = 0) const;
  // The files' headers, parsed and checked, and the index's spec against them (verify_contents).
  std::vector<SafetensorsHeader> headers() const;
  // `bytes` bytes of old rank `rank`'s file from `offset`; throws naming the file.
  void read(int rank, std::uint64_t offset, char* out, std::uint64_t bytes) const;
  std::uint64_t size(int rank) const { return sizes_.at(static_cast<std::size_t>(rank)); }

 private:
  std::string dir_;
  const CheckpointIndex& index_;
  std::vector<std::string> paths_;
  std::vector<int> fds_;
  std::vector<std::uint64_t> sizes_;
};

// The headers of a checkpoint's files, checked against its index (sizes, the spec, and
// checksums with `verify`).
std::vector<SafetensorsHeader> read_headers(const std::string& dir, const CheckpointIndex& index, bool verify);

// Builds the files of `ranks` (new ranks that `plan` planned) in the folder `stage_dir` (a
// CheckpointStage's) from `from`, with `threads` threads (0: one per core). Returns each
// file's entry (size, and the checksum of the bytes written), in the order of `ranks`.
std::vector<CheckpointFile> build_rank_files(const ReshardPlan& plan, const OldCheckpoint& from,
                                             const std::string& stage_dir, const std::vector<int>& ranks,
                                             int threads = 0);

// The index of `from` under the plan's new layout (same spec, progress and trainer data).
CheckpointIndex resharded_index(const CheckpointIndex& from, const ReshardPlan& plan,
                                std::vector<CheckpointFile> files);

struct ReshardOptions {
  int threads = 0;     // 0: one per core
  bool verify = true;  // check the old files' checksums before reading them (sizes always)
  RankNodes nodes;     // where old and new ranks run (locality); empty: one node
};

struct ReshardSummary {
  ReshardPlan plan;
  std::uint64_t bytes_written = 0;  // the new files, headers and padding included
  double seconds = 0;
};

// The whole reshard on one machine: read and check `from`, plan, build every new file
// with threads, commit `to` (which must not exist).
ReshardSummary reshard_checkpoint(const std::string& from, const std::string& to, const Layout& layout,
                                  const ReshardOptions& options = {});

}  // namespace morph::state
