// What a scheduling policy sees and decides, independent of where it runs: the same types
// serve morphd (nodes and jobs read from Slurm) and the simulator (a simulated cluster).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "libmorph/cluster/allocation.h"
#include "libmorph/cluster/cluster.h"
#include "libmorph/perf/iteration_time.h"
#include "libmorph/plan/plan.h"
#include "libmorph/record/gpu_groups.h"
#include "libmorph/policy/restart_cost.h"
#include "libmorph/request/morph_request.h"

namespace morph::policy {

struct NodeState {
  std::string name;
  NodeType type;  // capacity: type.gpus, type.cpus, type.host_memory_bytes
  GpuType gpu;
  // Its node type as morph.conf has it. A node partly used by other jobs (morphd) or
  // given in part (`--cluster 1x4xa800`) has a `type` reduced to its share ("a800~4",
  // "a800/4"), and placement counts it with the nodes of that share (NodePool), yet it is
  // a node of this type: its hardware (to_allocation()), and the whole nodes a request
  // asks for (on_fewest_nodes(), request_shape()). Empty: `type` is the whole type.
  NodeType whole = {};

  const NodeType& node_type() const { return whole.name.empty() ? type : whole; }
};

// A job's share of one node.
struct Slice {
  int node = 0;  // index into ClusterView::nodes
  int gpus = 0;
  int cpus = 0;
  double memory_bytes = 0;
  friend bool operator==(const Slice&, const Slice&) = default;
};

// Where and how a job runs; empty when it does not. A heterogeneous data-parallel
// allocation (JABAS, libmorph/planner/hetero_plan.h) spans nodes of several GPU types and
// says each type's accumulation steps in `groups`; the others leave it empty.
struct JobAllocation {
  std::vector<Slice> slices;
  ExecutionPlan plan;
  GpuGroups groups = {};

  bool empty() const { return slices.empty(); }
  int gpus() const;
  int cpus() const;
  friend bool operator==(const JobAllocation&, const JobAllocation&) = default;
};

struct JobState {
  std::string id;
  std::string app;  // performance-model key (e.g. "bert"): jobs of one app share curves
  std::string tenant = "default";
  Sla sla = Sla::best_effort;
  Workload workload;
  // The user's request (GPUs: requested_plan.gpus()): what rigid policies run and the
  // performance a guaranteed job is promised.
  ExecutionPlan requested_plan;
  int requested_cpus = 0;
  // The host memory per node its user asked for (--mem; morphd: the record's mem_mb=), a
  // floor of what each of its plans asks Slurm for; 0: none.
  double min_host_bytes_per_node = 0;
  // The nodes its user asked for (morphd: the request's record); 0: the fewest that hold it.
  int requested_nodes = 0;
  JobAllocation current;  // empty: pending
  // By ClusterView::nodes index, the nodes it may run on: those Slurm may start it on
  // (morphd: its partitions' and reservations' usable nodes) and those it runs on; empty:
  // every node.
  std::vector<bool> nodes_allowed = {};
  // Of those, the nodes it runs on where Slurm would start it no more (morphd: drained, to
  // reboot or power down once idle, outside its reservations or partitions): it may stay
  // there, in place or shrunk, but a start or a requeue there would leave it pending until
  // an administrator frees the node, never perhaps (strands()). Empty: none.
  std::vector<bool> nodes_kept = {};
  double submit_time_s = 0;
  // What is known of the job's length (job_length.h), as morphd will know it: the
  // iterations its user declared (--morph-iterations; 0: none), its time limit (0: none),
  // and the iterations it has done. Never its true remaining work.
  double declared_iterations = 0;
  double time_limit_s = 0;
  double attained_iterations = 0;
  // Seconds since submission spent without GPUs, queued or preempted (anti-starvation).
  double waited_s = 0;
  double ready_s = 0;                // a running job's (re)start is over at this time
  // When its last start or reconfiguration was carried out (< 0: none): morphd, when the
  // journal entry was done (a requeue's at its release, the others' at their update); the
  // simulator, when the job runs again (ready_s), as close as it gets to both.
  double last_restart_s = -1;
  double measured_iteration_s = 0;   // of the current allocation as reported; 0: unknown
  // The model's iteration time for the current plan when that plan was chosen (the
  // record's prediction); 0: unknown. See ElasticOptions::replan_in_place.
  double planned_iteration_s = 0;
  int restarts = 0;
  // slurmctld refuses every update of this running job until it is requeued: Slurm
  // without slurmdbd after a resize (docs/slurm.md). Any change of it is a requeue.
  bool record_locked = false;
  // A guaranteed job's promise: the measured iteration time of its own request (0: not
  // measured yet), and whether a configuration Morph chose measured slower than that.
  // See observe_iteration().
  double promised_iteration_s = 0;
  bool held_to_request = false;

  bool running() const { return !current.empty(); }
  bool runs_request() const { return current.plan == requested_plan && current.gpus() == requested_plan.gpus(); }
};

// Whether `a` spans the fewest nodes of one node type that hold its GPUs, as Slurm places a
// request of whole nodes (packed_shape(), plan_oracle.h): a node type's GPUs per node,
// NodeState::node_type(), whatever other jobs hold of its nodes.
bool on_fewest_nodes(const std::vector<NodeState>& nodes, const JobAllocation& a);
// Whether `a` holds GPUs on a node `job` may run on (JobState::nodes_allowed), or holds
// none yet: whether taking it back can give `job` anything.
bool frees_room_for(const JobState& job, const JobAllocation& a);
// The nodes `job` may be started or requeued onto: nodes_allowed less nodes_kept (empty:
// every node).
std::vector<bool> nodes_startable(const JobState& job);
// Whether `path` to `target` would leave `job` pending where Slurm starts it no more: a
// start or a requeue onto a node it may only stay on (JobState::nodes_kept).
bool strands(const JobState& job, const std::vector<Slice>& target, ChangePath path);
// Whether `a` spans no more nodes than `job`'s request asks for: the fewest, or
// JobState::requested_nodes when its user asked for more. Where a request is promised.
bool on_requested_nodes(const std::vector<NodeState>& nodes, const JobState& job, const JobAllocation& a);
// The same for where a running job is (false for a pending one).
bool on_requested_nodes(const std::vector<NodeState>& nodes, const JobState& job);

// What a running job reports, once its (re)start is over: its measured iteration time,
// and whether it runs on no more nodes than its request asks for (the fewest that hold
// it, on_fewest_nodes(), unless its user asked for more). A guaranteed job measured on
// its own request there learns its promise (spread over more nodes, it runs slower than
// the user asked for); measured more than kPromiseTolerance slower than its promise
// elsewhere, it is held to its request from then on (the model was wrong about it).
constexpr double kPromiseTolerance = 0.01;
void observe_iteration(JobState& job, double iteration_s, bool requested_nodes);

struct ClusterView {
  double now_s = 0;
  std::vector<NodeState> nodes;
  std::vector<JobState> jobs;             // pending and running
  std::map<std::string, int> quota_gpus;  // guaranteed GPUs per tenant; absent: unlimited
  RestartCosts restart;  // what a start or a change costs, per path
  // A running job reconfigured less than this long ago (JobState::last_restart_s) may
  // shrink or be preempted, but not grow or change plan: its restart is paid back first
  // (morphd: RestartPenaltySeconds). 0: no such wait (Table 4, as the artifact).
  double payback_s = 0;
  // Restart backoff (morph.conf RestartBackoff): a job restarted n times may be shrunk or
  // preempted for another job's growth only once it has run n payback_s since its last
  // restart, unless for a guaranteed job's minimum or an overdue job. Policies whose
  // ElasticOptions::restart_backoff is false (sia) ignore it.
  bool restart_backoff = true;
  // A running job is moved only when its value rises by this fraction (morph.conf
  // MinReconfigureGain): a margin against the model's error.
  double min_reconfigure_gain = 0.05;
  // A job that has waited this long (JobState::waited_s) is overdue: every policy runs it
  // at its smallest configuration from then on (overdue()). 0: never.
  double starvation_limit_s = 0;
  // The prior expected remaining running time of a job of unknown length (job_length.h):
  // the shortest time limit sites commonly offer (15 minutes).
  double unknown_length_prior_s = 900;
  // Whether a job may hold GPUs of two types at once, as one data-parallel job (JABAS;
  // morph.conf HeterogeneousJobs, `morph simulate --heterogeneous`). Morphling's policy
  // then gives a best-effort job GPUs of another type that are left idle (elastic.h).
  bool heterogeneous_jobs = false;
};

// The anti-starvation rule every policy applies: an overdue job is started before any
// later job could take its GPUs, and is never preempted or shrunk below its smallest
// configuration until it finishes (its waiting time never falls).
inline bool overdue(const JobState& job, const ClusterView& view) {
  return view.starvation_limit_s > 0 && job.waited_s >= view.starvation_limit_s;
}

enum class Action { start, reconfigure, preempt, keep, wait };

// The policy's answer for one job: where it should run (empty: not at all).
struct Decision {
  std::string job;
  JobAllocation target;
};

Action action_of(const JobState& job, const JobAllocation& target);
const char* to_string(Action action);

// The nodes' resources minus what `allocations` use, per node.
struct FreeResources {
  std::vector<int> gpus;
  std::vector<int> cpus;
  std::vector<double> memory_bytes;
};
FreeResources free_resources(const std::vector<NodeState>& nodes, const std::vector<const JobAllocation*>& allocations);

// Nodes named node001, node002 ... from a --gpus style SPEC (8x8xa800, 4x8xa100+4x8xv100):
// NODESxGPUSxTYPE is NODES nodes of the node type carrying TYPE with GPUS GPUs each (and
// that share of its CPUs and host memory). `what` names the spec in errors.
std::vector<NodeState> nodes_from_spec(std::string_view spec, const Cluster& cluster, std::string_view what);

// An Allocation (libmorph's hardware view) of a job's slices, for the performance model:
// each on its node's whole type (NodeState::node_type()).
Allocation to_allocation(const std::vector<NodeState>& nodes, const std::vector<Slice>& slices);

}  // namespace morph::policy
