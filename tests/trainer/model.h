// The computation of one pipeline stage on one tensor-parallel rank, in double precision:
//   x = word_embeddings[token]                (vocab-parallel: local rows or 0, TP all-reduce)
//   x = x + W2 gelu(W1 rmsnorm(x) + b1) + b2  (per layer; W1, b1 column-, W2 row-parallel,
//                                              partial sums TP all-reduced, b2 added once)
//   loss = CE(output_layer rmsnorm(x), target)  (vocab-parallel: max and sum-exp TP
//                                              all-reduced, padded logits masked out)
// Gradients accumulate into LocalState::grads, scaled by the caller's 1/B.
#pragma once

#include <mpi.h>

#include <vector>

#include <Eigen/Core>

#include "tests/trainer/dataset.h"
#include "tests/trainer/local_state.h"
#include "tests/trainer/model_spec.h"

namespace morph::trainer {

struct NormCache {
  Mat xhat;               // x / rms(x)
  Eigen::VectorXd rinv;   // 1 / rms(x), per row
  Mat out;                // xhat scaled by the norm weight
};

struct LayerCache {
  NormCache norm;
  Mat a;  // pre-activation (local 4h/t columns)
  Mat u;  // gelu(a)
};

struct MicroCache {
  std::vector<LayerCache> layers;  // this stage's layers
  NormCache final_norm;
  Mat dlogits;                     // d(scale * loss) / d logits, local vocabulary columns
};

class StageModel {
 public:
  StageModel(const ModelSizes& sizes, int first_layer, int end_layer, bool first_stage, bool last_stage,
             MPI_Comm tp, LocalState& state);

  // The stage's output: the first stage embeds `mb`'s tokens, the others take `in`.
  Mat forward(const MicroBatch& mb, const Mat& in, MicroCache& cache);
  // Last stage: the summed cross-entropy of `mb` given the stage output `hidden`; keeps
  // the gradient of scale * loss in `cache`.
  double loss(const MicroBatch& mb, const Mat& hidden, double scale, MicroCache& cache);
  // Last stage: the gradient on the stage output, from loss().
  Mat loss_backward(MicroCache& cache);
  // Back through the stage's layers (and the embedding on the first stage): returns the
  // gradient on the stage input.
  Mat backward(const MicroBatch& mb, Mat dout, MicroCache& cache);

 private:
  void norm_forward(const Mat& x, int weight, NormCache& c);
  Mat norm_backward(const Mat& dout, int weight, const NormCache& c);
  void allreduce(Mat& m, MPI_Op op = MPI_SUM);

  ModelSizes sizes_;
  ParamIds ids_;
  int first_layer_, end_layer_;
  bool first_stage_, last_stage_;
  MPI_Comm tp_;
  int tp_size_ = 1;
  LocalState& st_;
};

}  // namespace morph::trainer
