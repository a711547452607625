// One rank's training state: the tensor-parallel shards of the parameters its pipeline
// stage owns, flattened in spec order, each shard row-major with its vocabulary padding
// rows (always 0). That flattening is the one ZeRO partitions (shard_map.h), so the
// optimizer chunk of DP rank r is the slice [r c, (r+1) c) of it, c = ceil(size / d).
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include "libmorph/state/layout.h"
#include "libmorph/state/state_spec.h"

namespace morph::trainer {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<Mat>;
using VecMap = Eigen::Map<Eigen::VectorXd>;

// A parameter's local shard and where it lies in the flattening.
struct Slot {
  int param = -1;
  std::uint64_t offset = 0;          // first element in the flat vector
  std::vector<std::int64_t> shape;   // local shape (the file tensor's shape)
  std::int64_t rows = 1, cols = 1;   // as a matrix; a 1-D shard is rows x 1
  std::int64_t first_row = 0;        // global row of local row 0 (column and vocab splits)
  std::int64_t first_col = 0;        // global column of local column 0 (row split)
  std::int64_t global_rows = 1, global_cols = 1;
  std::uint64_t elements() const { return static_cast<std::uint64_t>(rows * cols); }
};

class LocalState {
 public:
  LocalState(const state::StateSpec& spec, const state::Layout& layout, state::RankCoords coords);

  const std::vector<Slot>& slots() const { return slots_; }
  bool owns(int param) const;
  const Slot& slot(int param) const;  // throws when the stage does not own it

  std::uint64_t flat_size() const { return flat_size_; }   // unpadded
  bool partitioned() const { return zero_ > 0; }
  std::uint64_t chunk() const { return chunk_; }           // elements per DP rank (all of them with ZeRO 0)
  std::uint64_t chunk_begin() const { return chunk_begin_; }

  // Global row-major index of local element k of `s`, or -1 for vocabulary padding.
  static std::int64_t global_index(const Slot& s, std::uint64_t k);

  MatMap weight(int param) { return map(params, param); }
  MatMap grad(int param) { return map(grads, param); }
  VecMap vec(int param) { return vec_map(params, param); }
  VecMap grad_vec(int param) { return vec_map(grads, param); }

  std::vector<double> params;  // flat, padded to chunk() * dp when partitioned
  std::vector<double> grads;   // same size
  std::vector<std::vector<double>> optim;  // one per optimizer state: chunk() elements

 private:
  MatMap map(std::vector<double>& v, int param);
  VecMap vec_map(std::vector<double>& v, int param);

  std::vector<Slot> slots_;
  std::vector<int> slot_of_;  // param -> index in slots_, or -1
  std::uint64_t flat_size_ = 0;
  int zero_ = 0;
  std::uint64_t chunk_ = 0;
  std::uint64_t chunk_begin_ = 0;
};

}  // namespace morph::trainer
