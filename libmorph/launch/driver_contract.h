// What morphd and `morphrun --driver` agree on. morphd moves or preempts a running job by
// sending the checkpoint signal to its batch step, which only a batch script that exec'd
// morphrun --driver catches: the driver saves the job's state and exits 75, and slurmctld
// requeues a batch job whose exit code slurm.conf lists in RequeueExit (any other
// non-zero exit ends it as failed). The driver names the steps it starts, so that morphd
// sees which jobs run under it: it signals no other.
#pragma once

#include <string_view>

namespace morph::launch {

inline constexpr int kExitRequeue = 75;  // EX_TEMPFAIL
inline constexpr std::string_view kDriverStepName = "morphrun-driver";  // srun --job-name of the driver's steps

// Whether slurm.conf's RequeueExit value ("75", "1-9,75", "" when unset) lists `code`.
// Items Slurm would not read (not a number or a range) list nothing.
bool requeue_exit_lists(std::string_view requeue_exit, int code = kExitRequeue);

}  // namespace morph::launch
