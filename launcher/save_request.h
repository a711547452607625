// How morphrun --driver asks its step's trainers to save without a signal. srun forwards
// the checkpoint signal as a step signal, which slurmstepd sends to every process of the
// step (_handle_signal_container -> proctrack_g_signal, Slurm 22.05): to trainers whose
// handler is not in place yet and to their helpers (data-loader workers), which die of
// it. srun forwards no harmless signal instead (it only logs SIGCONT). So the driver
// creates a file in the checkpoint folder, which every task of the step sees; each
// task's morphrun looks for it once a second and then signals its own trainers that are
// ready for it, as it does for the signal (supervisor.h).
#pragma once

#include <cstdint>
#include <string>

namespace morph::launcher {

// The request file of job `job_id` in `checkpoint_dir`: a dot-file, which
// choose_checkpoint never takes for a checkpoint.
std::string save_request_path(const std::string& checkpoint_dir, std::uint32_t job_id);

// Creates the request (and the folder). False, with the reason in `error`, when it cannot.
bool request_save(const std::string& path, std::string* error);

// Whether the request is there.
bool save_requested(const std::string& path);

// Removes the request; none there is fine.
void clear_save_request(const std::string& path);

}  // namespace morph::launcher
