// Saving and resuming the trainer's state in Morph's checkpoint format (one safetensors
// file per rank, named and laid out as libmorph/state/shard_map.h says, committed with
// index.json by rank 0). Collective over MPI_COMM_WORLD; errors are agreed on (see
// collective.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "libmorph/state/checkpoint.h"
#include "tests/trainer/groups.h"
#include "tests/trainer/local_state.h"
#include "tests/trainer/options.h"
#include "tests/trainer/optimizer.h"

namespace morph::trainer {

// Where --adaptive-batch had taken the global batch (index.json's "trainer"."adaptive"):
// the batch of the next step and the iterations the controller has counted.
struct AdaptiveState {
  std::int64_t global_batch = 0;
  std::int64_t iteration = 0;
};

// What index.json's "trainer" holds: the run's seed, dataset, model sizes, batch and Adam,
// and the adaptive batch when there is one.
nlohmann::json trainer_info(const Options& o, const Adam& adam, const std::optional<AdaptiveState>& adaptive = {});

// Writes checkpoint `dir` (which must not exist) of this rank's state at `progress`.
void save_checkpoint(const std::string& dir, const Options& o, const Adam& adam, const state::StateSpec& spec,
                     const Groups& g, const LocalState& st, state::Progress progress,
                     const std::optional<AdaptiveState>& adaptive = {});

// Reads checkpoint `dir` into `st` and returns its progress. The checkpoint must have
// this run's layout, model and data (seed, dataset size, starting global batch, and the
// bounds of --adaptive-batch when it adapted its batch: then `adaptive` gets its state).
state::Progress load_checkpoint(const std::string& dir, const Options& o, const state::StateSpec& spec,
                                const Groups& g, LocalState& st, std::optional<AdaptiveState>* adaptive = nullptr);

}  // namespace morph::trainer
