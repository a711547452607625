#include "tests/trainer/model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace morph::trainer {
namespace {

constexpr double kNormEps = 1e-5;
constexpr double kGeluK = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

// GELU, tanh approximation (Hendrycks and Gimpel), and its derivative.
double gelu(double a) { return 0.5 * a * (1.0 + std::tanh(kGeluK * (a + kGeluC * a * a * a))); }
double gelu_grad(double a) {
  const double t = std::tanh(kGeluK * (a + kGeluC * a * a * a));
  return 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * kGeluK * (1.0 + 3.0 * kGeluC * a * a);
}

}  // namespace

StageModel::StageModel(const ModelSizes& sizes, int first_layer, int end_layer, bool first_stage, bool last_stage,
                       MPI_Comm tp, LocalState& state)
    : sizes_(sizes),
      ids_{sizes.layers},
      first_layer_(first_layer),
      end_layer_(end_layer),
      first_stage_(first_stage),
      last_stage_(last_stage),
      tp_(tp),
      st_(state) {
  MPI_Comm_size(tp_, &tp_size_);
}

void StageModel::allreduce(Mat& m, MPI_Op op) {
  if (tp_size_ > 1) MPI_Allreduce(MPI_IN_PLACE, m.data(), static_cast<int>(m.size()), MPI_DOUBLE, op, tp_);
}

void StageModel::norm_forward(const Mat& x, int weight, NormCache& c) {
  c.rinv = ((x.array().square().rowwise().sum() / static_cast<double>(x.cols())) + kNormEps).rsqrt().matrix();
  c.xhat = c.rinv.asDiagonal() * x;
  c.out = c.xhat * st_.vec(weight).asDiagonal();
}

Mat StageModel::norm_backward(const Mat& dout, int weight, const NormCache& c) {
  st_.grad_vec(weight) += (dout.array() * c.xhat.array()).colwise().sum().matrix().transpose();
  const Mat dxhat = dout * st_.vec(weight).asDiagonal();
  const Eigen::VectorXd mean = (dxhat.array() * c.xhat.array()).rowwise().sum().matrix() / static_cast<double>(dout.cols());
  return c.rinv.asDiagonal() * (dxhat - mean.asDiagonal() * c.xhat);
}

Mat StageModel::forward(const MicroBatch& mb, const Mat& in, MicroCache& cache) {
  const int n = mb.size();
  Mat x;
  if (first_stage_) {
    const Slot& s = st_.slot(ids_.embedding());
    const MatMap table = st_.weight(ids_.embedding());
    x = Mat::Zero(n, sizes_.hidden);
    for (int i = 0; i < n; ++i) {
      const std::int64_t row = mb.tokens[static_cast<std::size_t>(i)] - s.first_row;
      if (row >= 0 && row < s.rows) x.row(i) = table.row(row);
    }
    allreduce(x);
  } else {
    x = in;
  }
  cache.layers.assign(static_cast<std::size_t>(end_layer_ - first_layer_), {});
  for (int l = first_layer_; l < end_layer_; ++l) {
    LayerCache& c = cache.layers[static_cast<std::size_t>(l - first_layer_)];
    norm_forward(x, ids_.norm(l), c.norm);
    c.a = c.norm.out * st_.weight(ids_.w1(l)).transpose();
    c.a.rowwise() += st_.vec(ids_.b1(l)).transpose();
    c.u = c.a.unaryExpr([](double a) { return gelu(a); });
    Mat y = c.u * st_.weight(ids_.w2(l)).transpose();
    allreduce(y);  // row-parallel partial sums
    y.rowwise() += st_.vec(ids_.b2(l)).transpose();
    x += y;
  }
  return x;
}

double StageModel::loss(const MicroBatch& mb, const Mat& hidden, double scale, MicroCache& cache) {
  const int n = mb.size();
  const Slot& s = st_.slot(ids_.head());
  norm_forward(hidden, ids_.final_norm(), cache.final_norm);
  const Mat logits = cache.final_norm.out * st_.weight(ids_.head()).transpose();  // n x local rows
  // Columns past the real vocabulary are padding: masked out (-inf logits, zero gradient).
  const auto valid = static_cast<Eigen::Index>(std::clamp<std::int64_t>(sizes_.vocab - s.first_row, 0, s.rows));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Mat max(n, 1);
  for (int i = 0; i < n; ++i) max(i, 0) = valid > 0 ? logits.row(i).head(valid).maxCoeff() : -kInf;
  allreduce(max, MPI_MAX);
  Mat e = Mat::Zero(n, logits.cols());
  Mat sums(n, 2);  // sum of exp(logit - max), target logit (where local)
  for (int i = 0; i < n; ++i) {
    e.row(i).head(valid) = (logits.row(i).head(valid).array() - max(i, 0)).exp().matrix();
    sums(i, 0) = e.row(i).sum();
    const std::int64_t col = mb.targets[static_cast<std::size_t>(i)] - s.first_row;
    sums(i, 1) = col >= 0 && col < valid ? logits(i, col) : 0.0;
  }
  allreduce(sums);
  double total = 0;
  cache.dlogits.resize(n, logits.cols());
  for (int i = 0; i < n; ++i) {
    total += std::log(sums(i, 0)) + max(i, 0) - sums(i, 1);
    cache.dlogits.row(i) = e.row(i) * (scale / sums(i, 0));
    const std::int64_t col = mb.targets[static_cast<std::size_t>(i)] - s.first_row;
    if (col >= 0 && col < valid) cache.dlogits(i, col) -= scale;
  }
  return total;
}

Mat StageModel::loss_backward(MicroCache& cache) {
  st_.grad(ids_.head()).noalias() += cache.dlogits.transpose() * cache.final_norm.out;
  Mat dnorm = cache.dlogits * st_.weight(ids_.head());
  allreduce(dnorm);  // vocab-parallel partial sums
  return norm_backward(dnorm, ids_.final_norm(), cache.final_norm);
}

Mat StageModel::backward(const MicroBatch& mb, Mat dout, MicroCache& cache) {
  for (int l = end_layer_ - 1; l >= first_layer_; --l) {
    const LayerCache& c = cache.layers[static_cast<std::size_t>(l - first_layer_)];
    st_.grad_vec(ids_.b2(l)) += dout.colwise().sum().transpose();
    st_.grad(ids_.w2(l)).noalias() += dout.transpose() * c.u;
    Mat da = dout * st_.weight(ids_.w2(l));
    da.array() *= c.a.unaryExpr([](double a) { return gelu_grad(a); }).array();
    st_.grad(ids_.w1(l)).noalias() += da.transpose() * c.norm.out;
    st_.grad_vec(ids_.b1(l)) += da.colwise().sum().transpose();
    Mat dnorm = da * st_.weight(ids_.w1(l));
    allreduce(dnorm);  // column-parallel partial sums
    dout += norm_backward(dnorm, ids_.norm(l), c.norm);
  }
  if (first_stage_) {
    const Slot& s = st_.slot(ids_.embedding());
    MatMap grad = st_.grad(ids_.embedding());
    for (int i = 0; i < mb.size(); ++i) {
      const std::int64_t row = mb.tokens[static_cast<std::size_t>(i)] - s.first_row;
      if (row >= 0 && row < s.rows) grad.row(row) += dout.row(i);
    }
  }
  return dout;
}

}  // namespace morph::trainer
