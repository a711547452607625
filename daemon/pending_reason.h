// Why a pending job cannot start whatever GPUs morphd gives it, from Slurm's pending
// reason (squeue's %r): morphd keeps those GPUs for jobs that can (docs/morphd.md).
#pragma once

#include <cstdint>
#include <string>

namespace morph::daemon {

// Whether a job is held: priority 0, except where slurmctld zeroes it itself for a record
// no node can satisfy (FAIL_BAD_CONSTRAINTS, "BadConstraints"): that job is not held, and
// the next update of it resets its priority (_update_job), so morphd plans it again.
bool held(std::uint32_t priority, std::uint32_t state_reason);

// Whether a held job is held by its user (`scontrol hold`, `sbatch -H`: JobHeldUser), a hold
// morphd must neither replace nor release. A requeue-hold reads JobHeldUser too, whoever
// asked for it (morphd's forced requeue among them), but with Slurm's description "job
// requeued in held state" (`state_desc`, null or empty for a user's hold).
bool held_by_user(std::uint32_t priority, std::uint32_t state_reason, const char* state_desc);

// What the job waits on ("held", "a dependency", "its partition (PartitionDown)"...), or
// empty when a placement may start it: Priority, Resources, and the limits that a smaller
// plan may pass (a job's TRES, size_limit(); a partition's nodes, which morphd reads; the
// TRES of the user's or group's jobs together, which end) are the policy's to answer.
// `state_reason` is slurm_job_info_t::state_reason; `is_held`, held() of the job.
std::string pending_block(bool is_held, std::uint32_t state_reason);

// A limit on one job's size that its request is over, which a smaller plan may pass:
// on its GPUs (MaxTRESPerJob or MaxTRESPerNode of its QOS or association on GRES, CPUs or
// memory, which grow with its GPUs) or on its nodes (MaxTRESPerJob on nodes). morphd keeps
// the job below the size Slurm refused (daemon/size_caps.h). Not the per-user limits
// (MaxTRESPerUser counts the user's running jobs together: the wait ends with them) nor
// PartitionNodeLimit (also below a partition's MinNodes; morphd reads partitions).
enum class SizeLimit { none, gpus, nodes };
SizeLimit size_limit(std::uint32_t state_reason);

}  // namespace morph::daemon
