// Which pieces of the global state each rank stores, and under which names (Tenplex's
// partitioning and allocation, seed 003 §4.1). Every local tensor of a rank's file is a
// concatenation of segments: runs of a global tensor's row-major elements, or zeros
// (vocabulary padding, the tail of a ZeRO partition).
//
// File tensors of a rank (coordinates dp, tp, pp):
//   ZeRO 0:    <param> (its TP shard) and optim.<state>.<param> for the params of stage pp
//   ZeRO 1, 2: <param>, and optim.<state>: chunk dp of the stage's TP shards flattened
//              in spec order and zero-padded to a multiple of d
//   ZeRO 3:    params.flat and optim.<state>, both chunks of that flattening
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/state/layout.h"
#include "libmorph/state/safetensors.h"

namespace morph::state {

// Global tensor g of a spec: parameter g / (1 + S) when g % (1 + S) == 0, else its
// optimizer state g % (1 + S) - 1 (S optimizer states).
struct GlobalTensor {
  int param = 0;
  int state = -1;  // -1: the parameter itself
};
int global_count(const StateSpec& spec);
int global_id(const StateSpec& spec, int param, int state);
GlobalTensor global_tensor(const StateSpec& spec, int id);
std::string global_name(const StateSpec& spec, int id);  // "w" or "optim.exp_avg.w"
Dtype global_dtype(const StateSpec& spec, int id);

struct Segment {
  int global = -1;          // -1: zeros
  std::uint64_t start = 0;  // first element in the global tensor's row-major order
  std::uint64_t count = 0;  // elements
};

struct LocalTensor {
  TensorDecl decl;
  std::vector<Segment> segments;  // in local order; their counts add up to the shape's elements
};

// Under ZeRO, a tensor of which each data-parallel rank of a TP and PP coordinate holds
// one chunk: the flattening of the coordinate's shards of some global tensors, in spec
// order, cut into dp chunks. Where each shard starts in the flattening is computed once,
// and a rank's chunk is found by its offset there, from the shards it overlaps alone.
struct ZeroPartition {
  TensorDecl decl;                   // a chunk: {ceil(elements / dp)}
  int tp = 0;                        // the TP coordinate
  std::vector<int> globals;          // the global tensors whose shards are flattened
  std::vector<std::uint64_t> first;  // first[i]: where globals[i]'s shard starts in the flattening

  // Data-parallel rank `dp`'s chunk, zero-padded to the chunk's size, for the spec and
  // layout it was made for.
  std::vector<Segment> chunk(const StateSpec& spec, const Layout& layout, int dp) const;
};

// The tensors of the data-parallel ranks of TP coordinate `tp` and pipeline stage `pp`,
// in file order: first the `replicated` ones, which every rank holds alike (names and
// segments; replicated_tensor_count() of them), then the ZeRO partitions, a chunk each.
// Every rank's file holds the same names, dtypes and shapes. check_layout() must have
// passed.
struct DataParallelTensors {
  std::vector<LocalTensor> replicated;
  std::vector<ZeroPartition> partitioned;
};
DataParallelTensors data_parallel_tensors(const StateSpec& spec, const Layout& layout, int tp, int pp);
// The names, dtypes and shapes of those tensors, in file order, without their segments
// (a row-parallel shard has one per row): what every file of the coordinate must hold,
// found at the cost of the coordinate's parameters, not of their rows.
std::vector<TensorDecl> data_parallel_decls(const StateSpec& spec, const Layout& layout, int tp, int pp);

// The tensors rank `rank` stores, in file order. check_layout() must have passed.
std::vector<LocalTensor> rank_tensors(const StateSpec& spec, const Layout& layout, int rank);

// How many leading tensors of rank_tensors(spec, layout, rank) every data-parallel replica
// of `rank` (same TP and PP coordinates) holds alike, names and segments: all of them
// without ZeRO, the parameters under ZeRO 1 and 2, none under ZeRO 3.
std::size_t replicated_tensor_count(const StateSpec& spec, const Layout& layout, int rank);

}  // namespace morph::state
