// What morphd and `morphrun --driver` agree on. morphd moves or preempts a running job by
// sending the checkpoint signal to its batch step, which only a batch script that exec'd
// morphrun --driver catches: the driver saves the job's state and exits 75, and slurmctld
// requeues a batch job whose exit code slurm.conf lists in RequeueExit (any other
// non-zero exit ends it as failed). The driver names the steps it starts, so that morphd
// sees which jobs run under it: it signals no other.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>

namespace morph::launch {

inline constexpr int kExitRequeue = 75;  // EX_TEMPFAIL
inline constexpr std::string_view kDriverStepName = "morphrun-driver";  // srun --job-name of the driver's steps

// Whether slurm.conf's RequeueExit value ("75", "1-9,75", "" when unset) lists `code`.
// Items Slurm would not read (not a number or a range) list nothing.
bool requeue_exit_lists(std::string_view requeue_exit, int code = kExitRequeue);

// The variables the driver's step tasks read from their environment: those the driver sets
// for them (MORPH_DRIVER, the record, the checkpoint choice, the save request, the job's
// name) and the launcher's own settings the batch script may have exported.
inline constexpr std::array<std::string_view, 8> kDriverStepVariables = {
    "MORPH_DRIVER", "MORPH_JOB_NAME", "MORPH_RECORD", "MORPH_RECORD_JOB", "MORPH_CHECKPOINT_CHOICE",
    "MORPH_SAVE_REQUEST", "MORPH_CONF", "MORPH_FRAMEWORKS"};

// The environment of a driver step's task without what another job's driver set: the
// driver sets MORPH_DRIVER to its job's id, and a job started from one of its trainers
// (sbatch exports the environment) must not take that job's checkpoint choice, save
// request, name or "driver" status for its own. MORPH_DRIVER, MORPH_CHECKPOINT_CHOICE,
// MORPH_SAVE_REQUEST and MORPH_JOB_NAME go in a Slurm job unless MORPH_DRIVER is its
// SLURM_JOB_ID (MORPH_RECORD has its own MORPH_RECORD_JOB); outside one, whoever set them
// meant them.
std::map<std::string, std::string> own_driver_variables(std::map<std::string, std::string> env);

// srun's --export value for a driver step, "" to leave srun's default. sbatch --export
// (or SBATCH_EXPORT) leaves its choice in SLURM_EXPORT_ENV, which srun then defaults to:
// NONE, or a list, would strip the variables the driver passes its tasks, and a step
// that finished would read as one that never ran. Unset or with ALL: "". Else the job's
// list (none for NONE or NIL) with kDriverStepVariables added by name, so that srun takes
// their values from its environment (a record holds commas, which a list would split).
std::string step_export(std::string_view job_export);

}  // namespace morph::launch
