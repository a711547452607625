// The allocations of one scheduling round under construction: what is free, where each
// job will run, and the last steps every policy shares — HAS placement, GetBestPlan on
// the placement, AllocMem, and CPUs (Morphling §5, Algorithm 1 lines 18-24).
#pragma once

#include <vector>

#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/placement.h"
#include "libmorph/policy/plan_oracle.h"

namespace morph::policy {

// How many CPUs a job gets for each GPU.
enum class CpuRule {
  share,      // the node's CPUs divided evenly among its GPUs
  requested,  // what the job asked for (rigid schedulers)
};

class Assignment {
 public:
  // Starts with nothing allocated: every running job is released unless held. Jobs
  // get plans with `freedom` unless set_freedom() says otherwise.
  Assignment(const ClusterView& view, PlanOracle& oracle, PlanFreedom freedom, CpuRule cpus);

  void set_freedom(std::size_t job, PlanFreedom freedom) { freedom_[job] = freedom; }

  const ClusterView& view() const { return view_; }
  NodePool& pool() { return pool_; }
  const NodePool& pool() const { return pool_; }
  const JobAllocation& target(std::size_t job) const { return targets_[job]; }
  bool placed(std::size_t job) const { return !targets_[job].empty(); }
  // The GPU type a running job is on (-1: pending); a heterogeneous job's first group's.
  int current_type(std::size_t job) const;

  // Keeps a running job exactly where and how it runs.
  void hold(std::size_t job);
  // The same when every GPU, CPU and byte it holds is still free; false, with nothing
  // changed, when another job took some.
  bool keep(std::size_t job);
  // Keeps a running job where it runs, under another plan (the in-place path).
  void hold(std::size_t job, const ExecutionPlan& plan);
  // GetBestPlan on a running job's own slices, within the host memory they hold.
  PlanChoice best_in_place(std::size_t job);
  // Places `gpus` GPUs of `type` for a job by HAS (a running job shrinking in whole nodes
  // on the nodes Slurm keeps), picks its best plan there (GetBestPlan) and reserves host
  // memory for it (AllocMem). False, with nothing changed, when the GPUs or a feasible
  // plan or the memory are not there. A running job placed where it may only stay
  // (JobState::nodes_kept), other than in place, is placed again off those nodes.
  bool start(std::size_t job, int type, int gpus);
  // Only the first: a running job shrinking in whole nodes, on the nodes Slurm keeps.
  bool start_shrunk(std::size_t job, int type, int gpus);
  // Same, on exactly these slices (CPUs and memory are filled in); false too where the
  // path there would strand the job (strands(): a requeue onto a node it may only stay on).
  bool start_on(std::size_t job, std::vector<Slice> slices);
  // JABAS: `gpus` GPUs of `type` and `extra_gpus` of `extra_type`, each placed by HAS with
  // the same GPUs on every node, under the best heterogeneous data-parallel plan there,
  // off the nodes the job may only stay on.
  bool start_hetero(std::size_t job, int type, int gpus, int extra_type, int extra_gpus);
  void release(std::size_t job);
  // Releases a held job and returns what it held, for put_back() to restore exactly
  // when a trial move is undone.
  JobAllocation take_back(std::size_t job);
  void put_back(std::size_t job, JobAllocation target);
  // Algorithm 1's CPU dimension: jobs started this round whose plan offloads to the CPU
  // take spare CPUs of their nodes while their predicted rate rises, keeping one CPU
  // for each idle GPU.
  void grant_spare_cpus();

  // One decision per job, in view order.
  std::vector<Decision> decisions() const;

 private:
  int cpus_per_gpu(std::size_t job, int node) const;
  // The nodes a running job keeps when Slurm shrinks it to `gpus` GPUs of `type`; empty
  // when that is not a shrink or they are taken.
  std::vector<Slice> kept_by_shrink(std::size_t job, int type, int gpus) const;

  const ClusterView& view_;
  PlanOracle& oracle_;
  std::vector<PlanFreedom> freedom_;
  CpuRule cpus_;
  NodePool pool_;
  std::vector<JobAllocation> targets_;
  std::vector<bool> started_;
};

}  // namespace morph::policy
