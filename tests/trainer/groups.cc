#include "tests/trainer/groups.h"

namespace morph::trainer {

Groups::Groups(const state::Layout& layout, int world_rank)
    : layout_(layout), rank_(world_rank), coords_(state::coords_of(layout, world_rank)) {
  const state::RankCoords c = coords_;
  MPI_Comm_split(MPI_COMM_WORLD, c.pp * layout.dp + c.dp, c.tp, &tp_);
  MPI_Comm_split(MPI_COMM_WORLD, c.pp * layout.tp + c.tp, c.dp, &dp_);
  if (c.pp > 0) prev_ = state::rank_of(layout, {c.dp, c.tp, c.pp - 1});
  if (c.pp + 1 < layout.pp) next_ = state::rank_of(layout, {c.dp, c.tp, c.pp + 1});
}

Groups::~Groups() {
  if (tp_ != MPI_COMM_NULL) MPI_Comm_free(&tp_);
  if (dp_ != MPI_COMM_NULL) MPI_Comm_free(&dp_);
}

}  // namespace morph::trainer
