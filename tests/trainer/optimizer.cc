#include "tests/trainer/optimizer.h"

#include <cmath>
#include <vector>

namespace morph::trainer {

void optimizer_step(LocalState& st, MPI_Comm dp, const Adam& adam, std::uint64_t step) {
  int d = 1;
  MPI_Comm_size(dp, &d);
  const auto chunk = static_cast<int>(st.chunk());
  std::vector<double> reduced;
  const double* g = st.grads.data();
  if (!st.partitioned()) {
    if (d > 1) MPI_Allreduce(MPI_IN_PLACE, st.grads.data(), chunk, MPI_DOUBLE, MPI_SUM, dp);
  } else {
    reduced.resize(st.chunk());
    MPI_Reduce_scatter_block(st.grads.data(), reduced.data(), chunk, MPI_DOUBLE, MPI_SUM, dp);
    g = reduced.data();
  }
  const double t = static_cast<double>(step);
  const double c1 = 1.0 - std::pow(adam.beta1, t);
  const double c2 = 1.0 - std::pow(adam.beta2, t);
  double* p = st.params.data() + st.chunk_begin();
  double* m = st.optim.at(0).data();
  double* v = st.optim.at(1).data();
  for (int i = 0; i < chunk; ++i) {
    m[i] = adam.beta1 * m[i] + (1.0 - adam.beta1) * g[i];
    v[i] = adam.beta2 * v[i] + (1.0 - adam.beta2) * g[i] * g[i];
    p[i] -= adam.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + adam.eps);
  }
  if (st.partitioned() && d > 1)
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, st.params.data(), chunk, MPI_DOUBLE, dp);
}

}  // namespace morph::trainer
