// What morphd reads from slurmctld in one round (slurm_load_node, slurm_load_jobs,
// slurm_load_partitions, slurm_load_reservations), as plain values, so that everything
// after the read is a pure function of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/pending_reason.h"
#include "libmorph/cluster/slurm_partitions.h"

namespace morph::daemon {

struct SlurmNode {
  std::string name;
  bool usable = true;          // slurmctld may start a job on it (node_state.h: usable)
  int gpus_in_use = 0;         // by any job (gres_used)
};

enum class JobPhase { pending, running, finishing, done };

struct SlurmJob {
  std::uint32_t id = 0;
  std::uint32_t user_id = 0;
  JobPhase phase = JobPhase::pending;
  bool held = false;            // priority 0, not for BadConstraints (pending_reason.h)
  std::string admin_comment;
  std::vector<std::string> nodes;  // running: the allocation, in order
  double submit_time_s = 0;
  double start_time_s = 0;
  double eligible_time_s = 0;   // BeginTime: a requeued job may not start before it
  double time_limit_s = 0;      // 0: none
  std::uint32_t restarts = 0;
  // Running, and slurmctld refuses its updates until it is requeued: it was resized and
  // no slurmdbd gives it back its accounting index (docs/slurm.md).
  bool record_locked = false;
  // Pending, and it cannot start whatever GPUs it is given: why ("held", "a dependency",
  // "its begin time", daemon/pending_reason.h); empty when it can.
  std::string blocked = {};
  // Pending, and over a limit of its size that a smaller plan may pass.
  SizeLimit size_limit = SizeLimit::none;
  std::string partition = {};  // the partitions it may run in ("a,b" while pending)
  // The reservations it asked for (--reservation; one of them may start it), or the one
  // it runs in; empty: none.
  std::vector<std::string> reservations = {};
  bool held_by_user = false;  // held, and by its user (JobHeldUser): morphd never releases it
  // Running, with a step `morphrun --driver` started (named launch::kDriverStepName) since
  // its start: its batch step is the driver, which catches the checkpoint signal.
  // SlurmClient::snapshot() reads it; a single job's read and the tests' fakes leave true.
  bool driver = true;
};

// A reservation (scontrol show reservation): from start to end only its jobs may start on
// its nodes, and a job of it only there (reservation.c, job_test_resv).
struct SlurmReservation {
  std::string name;
  std::vector<std::string> nodes;
  bool every_node = false;  // NodeList=ALL, or a list morphd cannot expand
  double start_s = 0;
  double end_s = 0;
  bool maint = false;       // MAINT: its jobs may also use nodes another reservation holds
  bool overlap = false;     // OVERLAP: so may they, but not a MAINT one's
  bool flex = false;        // FLEX: its jobs may run on any node, its own and others
  bool any_nodes = false;   // ANY_NODES (licences, burst buffers): its jobs may run on any node
  // Whole nodes; false: some cores of each (CoreCnt), which a job outside it may still
  // use the rest of (morphd keeps Morph off the whole node).
  bool whole_nodes = true;
};

struct ClusterSnapshot {
  double now_s = 0;
  std::vector<SlurmNode> nodes;
  std::vector<SlurmJob> jobs;
  std::vector<SlurmPartition> partitions;  // empty: unknown (nothing is bounded by them)
  std::vector<SlurmReservation> reservations;  // active and future ones
};

}  // namespace morph::daemon
