// One round of an elastic policy: Morphling's Algorithm 1 (seed 000 §5), parametrised
// so that its variants and the Sia baseline share it.
//
// Pass 1 decides how many GPUs of which type each job gets (Algorithm 1 lines 1-17):
// jobs with a minimum (privileged guaranteed jobs; under Sia every waiting job) reach it
// in submission order, then jobs in SortBySlope order grow one step of their resource-
// sensitivity curve at a time, from free GPUs or by shrinking the job with the lowest
// slope above its own minimum (to zero: preemption), while their slope is higher or they
// are below their minimum. Pass 2 places the amounts by HAS and runs GetBestPlan and
// AllocMem there (lines 18-24).
#pragma once

#include <vector>

#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"

namespace morph::policy {

// What a step of a job's allocation is worth.
enum class Objective {
  // Morphling: throughput in units of the job's remaining work. With R iterations left
  // at rate r a job finishes in T = R/r, plus the restart penalty P when its allocation
  // changes; a step is worth the change of 1/T. Shorter jobs weigh more (lower JCT) and a
  // reconfiguration happens only when its gain pays for its restart.
  completion_rate,
  // Sia: goodput normalised by the goodput of the job's smallest configuration, scaled
  // by the share of its remaining time not lost to a restart when it changes.
  normalized_goodput,
};

enum class FreedomRule {
  any,       // Morphling: any plan, any GPU count
  fixed,     // the requested GPU count (Morphling-E with any plan, Morphling-N with the requested one)
  scale_dp,  // the requested plan scaled along data parallelism (Morphling-R)
  sia,       // scale_dp for data-parallel requests; 3D-parallel requests stay as requested
};

struct ElasticOptions {
  Objective objective = Objective::completion_rate;
  FreedomRule freedom = FreedomRule::any;
  bool replan = true;           // with FreedomRule::fixed: GetBestPlan (true) or the requested plan
  bool admit_at_minimum = false;  // Sia: every waiting job first gets its smallest configuration
  // Morph's guarantee: a guaranteed job runs its own request until its speed there is
  // measured (its promise), and again for good once a configuration Morph chose measured
  // slower than that (JobState::held_to_request).
  bool measured_guarantee = true;
  // A running job that keeps its GPUs changes its plan there once the model, refitted
  // since the plan was chosen, predicts a better plan that pays back the restart (the
  // in-place path); see Round::hold_or_replan.
  bool replan_in_place = true;
  // Morph's restart backoff (ClusterView::restart_backoff, where the view has it on).
  bool restart_backoff = true;
};

std::vector<Decision> elastic_round(const ClusterView& view, PlanOracle& oracle, const ElasticOptions& options);

// Policy::steady for an elastic round: no waiting job could ever get GPUs, and no running
// job can grow, for want of a larger useful count on its curve or of GPUs that no other
// job could give up; then neither pass changes any job, whatever the slopes, which are
// all that the remaining work moves.
bool elastic_steady(const ClusterView& view, PlanOracle& oracle, const ElasticOptions& options);

}  // namespace morph::policy
