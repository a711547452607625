// Saving and resuming the trainer's state in Morph's checkpoint format (one safetensors
// file per rank, named and laid out as libmorph/state/shard_map.h says, committed with
// index.json by rank 0). Collective over MPI_COMM_WORLD; errors are agreed on (see
// collective.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "libmorph/state/checkpoint.h"
#include "tests/trainer/groups.h"
#include "tests/trainer/local_state.h"
#include "tests/trainer/options.h"
#include "tests/trainer/optimizer.h"

namespace morph::trainer {

// What index.json's "trainer" holds: the run's seed, dataset, model sizes, batch and Adam.
nlohmann::json trainer_info(const Options& o, const Adam& adam);

// Writes checkpoint `dir` (which must not exist) of this rank's state at `progress`.
void save_checkpoint(const std::string& dir, const Options& o, const Adam& adam, const state::StateSpec& spec,
                     const Groups& g, const LocalState& st, state::Progress progress);

// Reads checkpoint `dir` into `st` and returns its progress. The checkpoint must have
// this run's layout, model and data (seed, dataset size, global batch).
state::Progress load_checkpoint(const std::string& dir, const Options& o, const state::StateSpec& spec,
                                const Groups& g, LocalState& st);

}  // namespace morph::trainer
