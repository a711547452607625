// Rigid scheduling, the black-box baseline: a job runs on exactly the GPUs it requested,
// with its own plan, from start to end.
#pragma once

#include <cstddef>
#include <vector>

#include "libmorph/policy/assignment.h"

namespace morph::policy {

// The GPU types a rigid job can ever run on, the tightest memory first (HAS): those whose
// nodes in its partitions (JobState::nodes_allowed) hold its request with its plan. A
// rigid job starts on the first of them with room now (as Slurm places a GPU request of
// no type, or Frenzy's next feasible plan), and waits for the first when none has.
std::vector<int> rigid_types(const Assignment& a, PlanOracle& oracle, std::size_t job);

// Seconds until a job of `a` frees its GPUs: running ones from their (re)start and
// remaining work, ones started this round from the restart penalty on.
double rigid_time_left(const Assignment& a, PlanOracle& oracle, std::size_t job);

struct BackfillOptions {
  CpuRule cpus = CpuRule::requested;
  bool spare_cpus = false;  // offloading jobs take the spare CPUs of their nodes (Synergy)
};

// Submission order with EASY backfilling (Lifka, 1995): when the oldest waiting job does
// not fit, it gets a reservation at the earliest time enough GPUs of its type free up,
// and a later job may start now only if it ends before then (by the policy's estimate of
// its length, job_length.h) or leaves the reserved GPUs; behind an overdue job only the
// latter.
std::vector<Decision> backfill_round(const ClusterView& view, PlanOracle& oracle, const BackfillOptions& options);

// Policy::steady for the rigid policies (FIFO, Synergy, AntMan): they hold every running
// job as it runs, so their decisions can change only for a waiting job; steady when no
// waiting job could ever run on these nodes.
bool rigid_steady(const ClusterView& view, PlanOracle& oracle);

}  // namespace morph::policy
