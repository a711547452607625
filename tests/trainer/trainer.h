// The training loop: each step takes the next global batch of the sample stream, gives
// each DP rank its block (batch_split.h: equal, or its own share with --rank-batch), runs it as micro-batches through
// the pipeline (GPipe: all forwards, then all backwards, activations and gradients sent
// point to point between stages), averages gradients over the global batch and steps
// Adam. Saves and resumes through checkpoint_io.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "libmorph/adaptive/batch_controller.h"
#include "libmorph/state/checkpoint.h"
#include "tests/trainer/batch_split.h"
#include "tests/trainer/groups.h"
#include "tests/trainer/local_state.h"
#include "tests/trainer/model.h"
#include "tests/trainer/optimizer.h"
#include "tests/trainer/options.h"

namespace morph::trainer {

class Trainer {
 public:
  Trainer(const Options& o, const state::StateSpec& spec, const Groups& g, LocalState& st);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains to --steps (or --save-at, or the checkpoint signal); the process exit code.
  int run();

 private:
  struct StepResult {
    double loss = 0;                   // the mean over the batch (rank 0; 0 elsewhere)
    std::optional<double> similarity;  // on --similarity-every steps
  };
  // One optimizer step on `batch`.
  StepResult step(const std::vector<std::uint64_t>& batch, std::uint64_t number);
  void save(const std::string& why);
  std::string checkpoint_path(std::uint64_t step) const;  // <checkpoint-dir>/step_<step>

  const Options& o_;
  const state::StateSpec& spec_;
  const Groups& g_;
  LocalState& st_;
  Adam adam_;
  StageModel model_;
  state::Progress progress_;
  BatchSplit split_;
  std::optional<BatchController> adaptive_;  // --adaptive-batch
  std::FILE* loss_log_ = nullptr;
  std::FILE* metrics_ = nullptr;  // morphrun's FIFO (MORPH_METRICS)
};

}  // namespace morph::trainer
