// One checkpoint choice for every task of a plain srun step (morphrun without --driver,
// which chooses once and passes launch::kCheckpointChoiceVariable instead). Each task
// listing the folder on its own can disagree with another on NFS, where a node's cached
// listing lags (acdirmin/acdirmax): one would reshard, entering MPI_Init, while another
// started its trainer. Task 0 chooses and publishes the folder it chose in
// DIR/.morph-choice.JOB.RUN.STEP (RUN: the job's restarts, so that a requeued job's
// steps never read an earlier run's file; a dot-file, which choose_checkpoint never
// takes); the other tasks wait for the file and take that folder (launch::choice_of), or
// fail with task 0's error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "libmorph/launch/checkpoint_choice.h"

namespace morph::launcher {

struct StepChoiceId {
  std::uint32_t job_id = 0;
  int restarts = 0;  // SLURM_RESTART_COUNT
  std::uint32_t step_id = 0;
};

std::string step_choice_path(const std::string& checkpoint_dir, const StepChoiceId& id);

// Task 0: `folder` ("": a fresh start), or `error` when its choice failed, written to a
// temporary file renamed to step_choice_path() (creating the folder), so that no task
// reads half of it; the files of the job's other steps and runs go. Throws morph::Error
// naming the file.
void publish_step_choice(const std::string& checkpoint_dir, const StepChoiceId& id, const std::string& folder,
                         const std::string& error);

// What task 0 published: true with the folder ("": none), false with its error. Throws
// morph::Error naming `path` when it holds neither.
bool read_step_choice(const std::string& path, std::string* folder_or_error);

// The checkpoint task `task` of the step resumes from. Task 0 chooses (choose_checkpoint)
// and publishes its choice, or its error, which it throws; the others wait up to `wait_s`
// for the file and for the folder it names to show here, and take that folder
// (choice_of), or throw task 0's error, or one naming the file once the wait is over.
std::optional<launch::CheckpointChoice> step_checkpoint_choice(const std::string& checkpoint_dir,
                                                               const StepChoiceId& id, int task,
                                                               const state::Layout& layout, const std::string& model,
                                                               double wait_s);

}  // namespace morph::launcher
