// Where the processes of a job step sit: nodes, ranks per node, this process's ranks and
// the node's GPUs, read from Slurm's task variables (under srun) or from morphrun's
// --hosts/--node-rank (outside Slurm), and checked against the job's plan.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libmorph/plan/plan.h"
#include "libmorph/record/job_record.h"

namespace morph::launch {

using Environment = std::map<std::string, std::string>;

// The calling process's environment.
Environment process_environment();

struct StepLayout {
  std::uint32_t job_id = 0;   // 0 outside Slurm
  std::uint32_t step_id = 0;
  std::vector<std::string> nodes;  // the step's nodes; rank 0 runs on nodes[0]
  int node_rank = 0;               // this node's index in `nodes`
  int ranks_per_node = 0;          // equal on every node
  int job_nodes = 0;               // nodes of the whole allocation (SLURM_JOB_NUM_NODES)
  int gpus_on_node = -1;           // SLURM_GPUS_ON_NODE; -1 when Slurm did not say
  std::vector<std::string> node_gpus;  // the node's visible GPUs (CUDA_VISIBLE_DEVICES/SLURM_STEP_GPUS)
  std::vector<int> ranks;          // the global ranks this process starts: one, or the node's with --per-node

  int world_size() const { return ranks_per_node * static_cast<int>(nodes.size()); }
  int local_rank(int rank) const { return rank - node_rank * ranks_per_node; }
};

// Under srun: one task per rank (per_node false) or one task per node starting
// `ranks_per_node` ranks (per_node true, ranks_per_node from the plan). Ranks must be in
// block order (a node's ranks consecutive, so TP groups stay inside a node). Throws
// morph::Error naming the variable and its value.
StepLayout slurm_step_layout(const Environment& env, bool per_node, int plan_gpus);

// With --mpi-trainer under srun the trainers are the step's MPI processes, and srun
// --mpi=pmix makes each task one of them (one PMIX_RANK, which PMIx admits once): a task
// can start one trainer rank, never the node's several (--per-node). Throws morph::Error
// naming both options when `step` starts more than one rank in this task.
void check_mpi_trainer_tasks(const StepLayout& step);

// Outside Slurm: this host is node `node_rank` of `hosts`, starting all of its ranks.
StepLayout host_step_layout(const std::vector<std::string>& hosts, int node_rank, int plan_gpus);

// Refuses a plan that does not use exactly the step's GPUs and nodes, naming both: the
// ranks (dp*tp*pp against the tasks), the nodes and the GPUs per node of `placement`
// (when there is a record) against the allocation. Throws morph::Error.
void check_plan_fits(const ExecutionPlan& plan, const Placement* placement, const StepLayout& step);

}  // namespace morph::launch
