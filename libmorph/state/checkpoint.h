// A checkpoint on disk: a folder with one safetensors file per rank and index.json
// (format, layout, state spec, training progress, each file's size and checksum).
// New checkpoints are written into "<dir>.partial" and renamed into place only when
// every file is complete, synced and checked, so a crash at any moment leaves the old
// checkpoint, or the new one, usable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "libmorph/state/layout.h"
#include "libmorph/state/safetensors.h"
#include "libmorph/state/state_spec.h"

namespace morph::state {

constexpr const char* kCheckpointFormat = "morph-checkpoint/1";

struct Progress {
  std::uint64_t step = 0;     // optimizer steps done
  std::uint64_t samples = 0;  // samples consumed: the position in the dataset order
};

struct CheckpointFile {
  int rank = 0;
  std::string name;  // rank_00003.safetensors
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;  // XXH3-64 of the whole file
};

struct CheckpointIndex {
  Layout layout;
  StateSpec spec;
  Progress progress;
  nlohmann::json trainer = nlohmann::json::object();  // what the trainer needs besides (seed, dataset, ...)
  std::vector<CheckpointFile> files;                  // one per rank, in rank order
};

std::string rank_file_name(int rank);

// Reads and checks index.json of `dir` (files must match the layout's ranks). Throws
// morph::Error naming the file when it is no regular file, not JSON, nested deeper than
// 64 levels (refused before it is built) or of the wrong shape.
CheckpointIndex read_index(const std::string& dir);
// Every file's size, and with `checksums` its content (`threads` files at a time, 0: one
// per core), against the index.
void verify_files(const std::string& dir, const CheckpointIndex& index, bool checksums = true, int threads = 0);

// The index's spec against `headers` (one per file, in rank order): its layers as
// check_layers() sees them (read_index() refuses such a spec already; an index built in
// memory may not have been read), and each file holds exactly the tensors the layout
// places on its rank, of their dtypes and shapes (checked from the layout's declarations,
// before any segment is computed). A lying index is an error naming index.json, the file
// or field and the values found.
void verify_contents(const std::string& dir, const CheckpointIndex& index,
                     const std::vector<SafetensorsHeader>& headers);

// The deepest index.json read_index() takes: deeper than any Morph writes (the spec's
// shapes are 5 levels down) with room for a trainer's own values ("trainer", one level
// down). nlohmann parses iteratively, but copies and compares recursively: 100,000 levels
// overflowed the stack.
inline constexpr int kMaxIndexNesting = 64;

// Morph's writers stamp each rank file's metadata with its rank and layout. ZeRO's shards
// of one tensor have one name, dtype and shape on every rank, so a file saved under
// another rank's name passes every other check: a stamp that disagrees is an error
// naming `what`. A file without a stamp (written by other tools) passes.
void check_stamp(const SafetensorsHeader& header, const Layout& layout, int rank, const std::string& what);

// The folder a new checkpoint `dir` is written into before its commit ("<dir>.partial").
std::string stage_folder(const std::string& dir);
// The file its writer locks (stage_folder(dir) + ".lock"): a regular file beside the stage.
std::string stage_lock_file(const std::string& dir);

// The folder a new checkpoint is written into, and its commit. Under MPI one process
// owns the stage; the others write their files into stage_folder(dir). The owner holds
// an exclusive flock(2) on "<dir>.partial.lock" for the object's life, so that a second
// writer of the same checkpoint (a user's `morph reshard` beside morphrun's) is refused
// instead of removing a live stage.
class CheckpointStage {
 public:
  // `dir` must not exist, nor end in ".partial" or ".partial.lock"; a "<dir>.partial"
  // left by a crash is removed, unless it is the checkpoint `source` the new one is made
  // from (`--from X.partial --to X`). Folders created for it are synced. Throws
  // morph::Error when another process is writing `dir`.
  explicit CheckpointStage(std::string dir, const std::string& source = {});
  ~CheckpointStage();  // removes the stage when not committed, and the lock file
  CheckpointStage(const CheckpointStage&) = delete;
  CheckpointStage& operator=(const CheckpointStage&) = delete;

  const std::string& path() const { return stage_; }
  std::string file_path(int rank) const;
  // Checks every file against `index` (sizes; checksums too unless the caller computed
  // them from the synced files), writes index.json, syncs the folder and renames it to
  // its final name, then releases the lock. Once renamed it is committed: a failed sync
  // of the parent folder is then a warning on stderr, not an error.
  void commit(const CheckpointIndex& index, bool verify_checksums = true);

 private:
  void unlock();  // removes the lock file, then closes it

  std::string dir_;
  std::string stage_;
  std::string lock_;  // "<dir>.partial.lock"
  int lock_fd_ = -1;
  bool committed_ = false;
};

// fsync of a folder (after creating or renaming entries in it).
void sync_directory(const std::string& dir);

}  // namespace morph::state
