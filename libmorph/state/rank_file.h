// One rank's file of a checkpoint, written from and read into the trainer's own buffers
// (no staging copy): the tensors shard_map.h places on the rank, in its order. Shared by
// the C++ reference trainer and the `morph` Python module, so both frameworks write and
// accept exactly the same files.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>

#include "libmorph/state/checkpoint.h"
#include "libmorph/state/layout.h"
#include "libmorph/state/state_spec.h"

namespace morph::state {

// The trainer's memory for file tensor `decl`: exactly its bytes (elements times the
// dtype's size). Throws morph::Error when the trainer holds no such tensor.
using BufferOf = std::function<std::span<std::byte>(const TensorDecl& decl)>;
using ConstBufferOf = std::function<std::span<const std::byte>(const TensorDecl& decl)>;

// Writes rank `rank`'s file into the stage folder `stage` (CheckpointStage::path(), or
// stage_folder(dir) on the other ranks), synced; returns its index entry (size, XXH3).
CheckpointFile write_rank_file(const std::string& stage, const StateSpec& spec, const Layout& layout, int rank,
                               const ConstBufferOf& buffer_of);

// index.json of checkpoint `dir`, checked for a resume under `layout` with `spec`: another
// layout is an error that names the `morph reshard` to run, another spec one that names
// the first parameter that differs ("another model").
CheckpointIndex index_for_resume(const std::string& dir, const StateSpec& spec, const Layout& layout);

// Checks rank `rank`'s file of `dir` against `index` (size, checksum, every tensor's
// dtype and shape) and only then reads each tensor into its buffer.
void read_rank_file(const std::string& dir, const CheckpointIndex& index, int rank, const BufferOf& buffer_of);

}  // namespace morph::state
