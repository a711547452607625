#include "tests/trainer/similarity.h"

#include <algorithm>
#include <cmath>

namespace morph::trainer {

double gradient_similarity(const std::vector<double>& half_a, const LocalState& st, const state::StateSpec& spec,
                           const Groups& g) {
  std::vector<double> a = half_a;
  std::vector<double> b(st.grads.size());
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = st.grads[i] - half_a[i];
  const int n = static_cast<int>(a.size());
  if (g.layout().dp > 1) {
    MPI_Allreduce(MPI_IN_PLACE, a.data(), n, MPI_DOUBLE, MPI_SUM, g.dp());
    MPI_Allreduce(MPI_IN_PLACE, b.data(), n, MPI_DOUBLE, MPI_SUM, g.dp());
  }
  // Over this rank's shards; every data-parallel replica holds the same sums, so only DP
  // rank 0 contributes to the sum over the world.
  double sums[3] = {0, 0, 0};  // a.b, |a|^2, |b|^2
  if (g.coords().dp == 0)
    for (const Slot& s : st.slots()) {
      if (spec.params[static_cast<std::size_t>(s.param)].split == state::Split::replicated && g.coords().tp != 0)
        continue;
      for (std::uint64_t k = s.offset; k < s.offset + s.elements(); ++k) {
        sums[0] += a[k] * b[k];
        sums[1] += a[k] * a[k];
        sums[2] += b[k] * b[k];
      }
    }
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (sums[1] <= 0 || sums[2] <= 0) return 0;
  // Clamped: rounding takes the cosine of near-parallel halves past 1 (1.0000000000000002),
  // which BatchController::observe refuses.
  return std::clamp(sums[0] / std::sqrt(sums[1] * sums[2]), -1.0, 1.0);
}

}  // namespace morph::trainer
