// Before the trainer starts: the newest checkpoint of --checkpoint DIR, resharded to the
// plan's layout when it is in another one (over MPI across the step's tasks under srun,
// with threads outside Slurm), into a new folder committed atomically, so that a crash
// in the middle leaves the old checkpoint as it was.
#pragma once

#include <optional>
#include <string>

#include "launcher/options.h"
#include "libmorph/launch/checkpoint_choice.h"
#include "libmorph/launch/step_layout.h"

namespace morph::launcher {

// nullopt: no checkpoint yet (a fresh start). Under morphrun --driver, the one its
// environment names (launch::kCheckpointChoiceVariable: the driver chose and resharded it
// for every task of the step), never resharded here. In a step of several tasks without
// it, task 0's choice (step_choice.h), which the others wait up to `wait_s` for. Throws
// morph::Error: another model's checkpoint, a layout the checkpoint cannot take, a
// failed reshard, a reshard an MPI trainer's step cannot do (--mpi-trainer: the trainer
// owns the step's PMIx rank, so morphrun --driver reshards in a step of its own), or no
// choice from task 0 in time.
std::optional<launch::CheckpointChoice> prepare_checkpoint(const Options& o, const launch::Environment& env,
                                                           const std::string& model, const state::Layout& layout,
                                                           bool in_slurm_step, double wait_s);

}  // namespace morph::launcher
