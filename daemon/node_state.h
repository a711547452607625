// What morphd makes of a node as slurm_load_node shows it: whether slurmctld may start a
// new job on it, and how many of its GPUs jobs hold. slurm.h's constants only, no libslurm.
#pragma once

#include <cstdint>
#include <string_view>

namespace morph::daemon {

// Whether morphd may plan new GPUs on a node in `node_state` (node_info_t): not where
// slurmctld starts no job, a node down, future or unknown, drained, failing, not
// responding (also while it powers up), rebooting (REBOOT_ISSUED), powering down
// (POWERING_DOWN) or registered with a bad configuration; nor where an administrator
// asked for a reboot or a power down once it is idle (REBOOT_REQUESTED, POWER_DOWN without
// ASAP, which drains it): Slurm still starts jobs there until then, but Morph's jobs grow
// into every GPU that frees up and would keep it from ever being idle. A node powered
// down by power saving (POWERED_DOWN) is usable: Slurm resumes it for the job it starts
// there (node_scheduler.c). Reservations are apart (reservations.h).
bool usable(std::uint32_t node_state);

// The GPUs of a node that jobs hold, from its gres_used ("gpu:a100:3(IDX:0-1,3),
// shard:a100:1(IDX:4)" -> 4): those allocated whole, and those any job holds a shard or
// MPS share of, which select/cons_tres gives no job whole (gres_sched.c: a GPU in the
// shared GRES's gres_bit_alloc is not available to a GPU request). A GPU counts once.
// Without IDX, a GPU count counts as it is, and shards or MPS count none: Slurm then
// keeps no per-GPU record of them and does not keep whole-GPU jobs off their GPUs.
int gpus_in_use(std::string_view gres_used);

}  // namespace morph::daemon
