// What a start or a change of allocation or plan costs a job: the seconds from the
// decision to its first iteration, which depend on the path that carries the change out
// (docs/morphd.md, "Overhead per path"). morphd picks the path with change_path(); the
// policies weigh and the simulator charges its cost.
#pragma once

#include <string>
#include <vector>

namespace morph {
struct ExecutionPlan;
}

namespace morph::policy {

struct NodeState;  // cluster_view.h, which holds RestartCosts
struct Slice;
struct JobState;
class PlanOracle;

enum class ChangePath {
  start,    // a pending job's record and resources are set; Slurm starts it
  inplace,  // same GPUs: morphrun --driver checkpoints, reshards and restarts the step
  shrink,   // fewer of its nodes, the same on each: the same, and the driver gives nodes back
  requeue,  // anything else: checkpoint signal, requeue, new resources, Slurm's wait
};
const char* to_string(ChangePath path);

// Where a job's GPUs are, as a Morph record holds it: one GPU type, and the same GPUs and
// CPUs on each node (`uniform` false when slices differ).
struct NodeShape {
  std::string gpu_type;
  int nodes = 0;  // 0: pending
  int gpus_per_node = 0;
  int cpus_per_gpu = 0;
  bool uniform = true;
  friend bool operator==(const NodeShape&, const NodeShape&) = default;
};
NodeShape node_shape(const std::vector<NodeState>& nodes, const std::vector<Slice>& slices);

// The path from `from` to `to`: start for a pending job; with the same GPU type, GPUs and
// CPUs per node, in place on as many nodes and a shrink on fewer; else a requeue.
ChangePath change_path(const NodeShape& from, const NodeShape& to);

// How a pending job starts: a job that ran before was requeued (preempted) and waits as
// a requeue does (Slurm's BeginTime); the others start.
ChangePath start_path(const JobState& job);
// The path from where `job` is (running or not) to `target`, by its nodes alone; every
// change of a running job whose record is locked (JobState::record_locked), and a move to
// nodes other than its own (in place) or the first of its own (a shrink, as Slurm keeps
// them), is a requeue.
ChangePath change_path(const JobState& job, const std::vector<NodeState>& nodes, const std::vector<Slice>& target);
// The path a change to `plan` on `target` takes: the one morphd carries out, the policies
// weigh and the simulator charges. As above, and within_host_memory().
ChangePath change_path(const JobState& job, const std::vector<NodeState>& nodes, const std::vector<Slice>& target,
                       const ExecutionPlan& plan, const PlanOracle& oracle);
// A running job's record cannot raise its host memory (job_submit_morph makes the memory
// follow the plan, which Slurm refuses for a running job): an in-place change or a shrink,
// which keep the GPUs per node, to a `plan` that needs more host memory per node than the
// job's current plan (ZeRO-Offload on fewer GPUs) is a requeue. The user's --mem
// (JobState::min_host_bytes_per_node) is a floor of both. Any other `path` is returned.
ChangePath within_host_memory(ChangePath path, const JobState& job, const ExecutionPlan& plan,
                              const PlanOracle& oracle);

// Seconds per path (morph.conf RestartPenaltySeconds and its per-path keys).
struct RestartCosts {
  double start_s = 260;
  double inplace_s = 260;
  double shrink_s = 260;
  double requeue_s = 260;

  static RestartCosts uniform(double seconds) { return {seconds, seconds, seconds, seconds}; }
  double of(ChangePath path) const;
  friend bool operator==(const RestartCosts&, const RestartCosts&) = default;
};

// "start=S,inplace=S,shrink=S,requeue=S" (any subset, over `base`); throws naming what is wrong.
RestartCosts parse_restart_costs(const std::string& text, const std::string& what, RestartCosts base);

}  // namespace morph::policy
