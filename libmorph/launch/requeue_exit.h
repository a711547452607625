// The exit that asks Slurm to requeue a job: morphrun --driver saves the job's state and
// exits 75 when morphd moves or preempts it, and slurmctld requeues a batch job whose exit
// code slurm.conf lists in RequeueExit; any other non-zero exit ends the job as failed.
#pragma once

#include <string_view>

namespace morph::launch {

inline constexpr int kExitRequeue = 75;  // EX_TEMPFAIL

// Whether slurm.conf's RequeueExit value ("75", "1-9,75", "" when unset) lists `code`.
// Items Slurm would not read (not a number or a range) list nothing.
bool requeue_exit_lists(std::string_view requeue_exit, int code = kExitRequeue);

}  // namespace morph::launch
