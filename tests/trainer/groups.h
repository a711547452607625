// The MPI process groups of a layout: this rank's coordinates, its tensor-parallel and
// data-parallel communicators, and its pipeline neighbours (Megatron rank order, see
// libmorph/state/layout.h).
#pragma once

#include <mpi.h>

#include "libmorph/state/layout.h"

namespace morph::trainer {

class Groups {
 public:
  // MPI_COMM_WORLD must hold exactly layout.ranks() processes (checked by the caller).
  Groups(const state::Layout& layout, int world_rank);
  ~Groups();
  Groups(const Groups&) = delete;
  Groups& operator=(const Groups&) = delete;

  const state::Layout& layout() const { return layout_; }
  int rank() const { return rank_; }
  const state::RankCoords& coords() const { return coords_; }
  bool first_stage() const { return coords_.pp == 0; }
  bool last_stage() const { return coords_.pp == layout_.pp - 1; }
  MPI_Comm tp() const { return tp_; }  // same (dp, pp), ordered by tp
  MPI_Comm dp() const { return dp_; }  // same (tp, pp), ordered by dp
  int prev_stage() const { return prev_; }  // world rank, or MPI_PROC_NULL
  int next_stage() const { return next_; }

 private:
  state::Layout layout_;
  int rank_ = 0;
  state::RankCoords coords_;
  MPI_Comm tp_ = MPI_COMM_NULL;
  MPI_Comm dp_ = MPI_COMM_NULL;
  int prev_ = MPI_PROC_NULL;
  int next_ = MPI_PROC_NULL;
};

}  // namespace morph::trainer
