// How morphrun --driver asks its step's trainers to save without a signal. srun forwards
// the checkpoint signal as a step signal, which slurmstepd sends to every process of the
// step (_handle_signal_container -> proctrack_g_signal, Slurm 22.05): to trainers whose
// handler is not in place yet and to their helpers (data-loader workers), which die of
// it. srun forwards no harmless signal instead (it only logs SIGCONT). So the driver
// creates a file in the checkpoint folder, which every task of the step sees; each
// task's morphrun looks for it once a second and then signals its own trainers that are
// ready for it, as it does for the signal (supervisor.h).
//
// A request is for one step: its file names the job and a token the driver draws for
// that step and passes to its tasks (MORPH_SAVE_REQUEST is the whole path). A file an
// earlier step or run of the job left, or a node's NFS cache still shows after its
// removal (attribute and dentry caches, acdirmin/acregmin), names another token, so it
// never asks a new step to save.
#pragma once

#include <cstdint>
#include <string>

namespace morph::launcher {

// The request file of the step `step_token` of job `job_id` in `checkpoint_dir`:
// DIR/.morph-save-request.JOBID.TOKEN, a dot-file, which choose_checkpoint never takes
// for a checkpoint.
std::string save_request_path(const std::string& checkpoint_dir, std::uint32_t job_id, const std::string& step_token);

// A new step's token: 16 random hex digits, drawn anew for every step the driver starts.
std::string new_step_token();

// Removes every request file of job `job_id` in `checkpoint_dir`, whatever its step
// (those of a driver killed before it removed its own); other jobs' stay.
void clear_save_requests(const std::string& checkpoint_dir, std::uint32_t job_id);

// Creates the request (and the folder). False, with the reason in `error`, when it cannot.
bool request_save(const std::string& path, std::string* error);

// Whether the request is there.
bool save_requested(const std::string& path);

// Removes the request; none there is fine.
void clear_save_request(const std::string& path);

}  // namespace morph::launcher
