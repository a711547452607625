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
  // Opens every file of `index`, all at once: the soft limit on open files is raised
  // toward the hard one to hold them. Their sizes must match the index.
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

struct BuiltFiles {
  std::vector<CheckpointFile> files;  // size, and the checksum of the bytes written; by rank
  std::uint64_t bytes_read = 0;       // zeros excluded, each replica counted
};

// Builds the files of the new ranks that `planner` plans in the folder `stage_dir` (a
// CheckpointStage's) from `from`, with `threads` threads (0: one per core). Each file is
// planned when a thread takes it up and its plan dropped when the file's replicas are
// built, so at most threads + 1 files' plans are held at a time, whatever their number.
BuiltFiles build_files(const FilePlanner& planner, const OldCheckpoint& from, const std::string& stage_dir,
                       int threads = 0);

// The index of `from` under layout `to` (same spec, progress and trainer data).
CheckpointIndex resharded_index(const CheckpointIndex& from, const Layout& to, std::vector<CheckpointFile> files);

struct ReshardOptions {
  int threads = 0;     // 0: one per core
  bool verify = true;  // check the old files' checksums before reading them (sizes always)
  RankNodes nodes;     // where old and new ranks run (locality); empty: one node
};

struct ReshardSummary {
  Layout from, to;
  std::uint64_t bytes_read = 0;     // zeros excluded, each replica counted (ReshardPlan::bytes)
  std::uint64_t bytes_written = 0;  // the new files, headers and padding included
  std::uint64_t most_ops_held = 0;  // the most copy operations of the plan held at one time
  double seconds = 0;
};

// The whole reshard on one machine: read and check `from`, index it, plan and build the
// new files with threads (build_files), commit `to` (which must not exist).
ReshardSummary reshard_checkpoint(const std::string& from, const std::string& to, const Layout& layout,
                                  const ReshardOptions& options = {});

}  // namespace morph::state
