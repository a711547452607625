// What a policy expects of a job's remaining work, from what morphd can know of it (issue
// 11): the iterations its user declared (--morph-iterations), else its time limit at the
// predicted speed of its request, else an estimate from the work it has done. The true
// remaining work is the simulator's alone.
#pragma once

#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"

namespace morph::policy {

// The job's declared total iterations: declared_iterations, else time_limit_s at
// `requested_rate` (iterations/s of its request as predicted); 0 when neither is known.
double declared_total_iterations(const JobState& job, double requested_rate);

// Expected remaining iterations. A declaration counts while the job has not reached it;
// past it, or without one, the attained-service estimate of Tiresias (Gu et al., NSDI'19
// §3.1: without known durations, attained service stands in for remaining service): in a
// heavy-tailed job population (Pareto, shape 2) the expected remaining work equals the
// work done, so a job that has run long is expected to run long; a job that has done less
// than `view.unknown_length_prior_s` at its requested speed is expected to need that.
double expected_remaining_iterations(const JobState& job, const ClusterView& view, double requested_rate);

// The same with the requested rate predicted by `oracle`: the request packed on the
// fastest GPU type of the view's nodes that can run it.
double expected_remaining_iterations(const JobState& job, const ClusterView& view, PlanOracle& oracle);

}  // namespace morph::policy
