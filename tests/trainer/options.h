// Command line of morph-trainer, the reference trainer that proves checkpoint resharding
// keeps training going as if nothing happened (see continuity.sh).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "libmorph/state/layout.h"

namespace morph::trainer {

struct Options {
  state::Layout layout;
  int layers = 4;
  int hidden = 16;
  int vocab = 50;
  int vocab_multiple = 4;  // vocabulary padding: rows padded to a multiple of this times tp
  std::uint64_t samples = 4096;
  std::uint64_t global_batch = 32;
  int micro_batches = 1;  // per DP rank and step (gradient accumulation, GPipe)
  // --rank-batch (implied in a heterogeneous job, MORPH_GPU_GROUPS): this rank processes
  // rank_samples = MORPH_LOCAL_BATCH x MORPH_WORKERS x MORPH_GA samples in
  // MORPH_WORKERS x MORPH_GA micro-batches (concurrent workers run one after the other).
  bool rank_batch = false;
  std::uint64_t rank_samples = 0;
  int rank_micro_batches = 0;
  std::uint64_t steps = 10;  // train until this many optimizer steps are done
  double lr = 1e-2;
  std::uint64_t seed = 1;
  std::string checkpoint_dir;           // checkpoints go to <dir>/step_<N>
  std::optional<std::uint64_t> save_at;  // save after this step and exit 0
  std::uint64_t save_every = 0;         // > 0: also save after every this many steps and go on
  double save_seconds = 0;              // a save lasts at least this long before it commits (fault tests)
  std::string resume;                   // a committed checkpoint to continue from
  std::string loss_log;                 // rank 0 writes "step loss" lines
  std::string metrics;                  // rank 0 writes morphrun's metrics lines here (MORPH_METRICS)
  std::string model_name;               // MORPH_MODEL, recorded in checkpoints as morph_model
  int checkpoint_signal = 0;            // 0: none
  std::string checkpoint_signal_name;
  double min_step_seconds = 0;          // sleep so that a step lasts at least this long (launcher tests)
  double emulate_speed = 0;             // > 0: a step lasts the record's predicted iter_ms times this
  std::uint64_t similarity_every = 0;   // > 0: gradient similarity every this many steps (similarity.h)
  // The period when the batch bounds come from the job (MORPH_ADAPTIVE_BATCH) and no
  // --similarity-every is given.
  static constexpr std::uint64_t kJobSimilarityEvery = 10;
  // --adaptive-batch MIN:MAX: after each similarity, JABAS's rule (adaptive/batch_controller.h)
  // sets the next global batch and scales the learning rate; max_batch 0: off.
  std::int64_t adaptive_min = 0, adaptive_max = 0;
  double similarity_target = 0.1;  // γ
  double adaptive_rate = 0.1;      // α
  bool quiet = false;
};

// Parses argv (identically on every rank). Returns nullopt after printing --help (rank 0
// only prints). Throws morph::Error with a one-line message on bad input.
std::optional<Options> parse_options(int argc, char** argv, bool print);

// "SIGUSR2", "USR2" or a number -> the signal number; throws morph::Error.
int parse_signal(const std::string& text);

}  // namespace morph::trainer
