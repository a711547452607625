#include "libmorph/policy/job_length.h"

#include <algorithm>
#include <set>
#include <string>

namespace morph::policy {

double declared_total_iterations(const JobState& job, double requested_rate) {
  if (job.declared_iterations > 0) return job.declared_iterations;
  if (job.time_limit_s > 0 && requested_rate > 0) return job.time_limit_s * requested_rate;
  return 0;
}

double expected_remaining_iterations(const JobState& job, const ClusterView& view, double requested_rate) {
  const double declared = declared_total_iterations(job, requested_rate);
  if (declared > job.attained_iterations) return declared - job.attained_iterations;
  // Tiresias (NSDI'19): attained service predicts the rest; Pareto(2): E[rest | a] = a.
  const double prior = view.unknown_length_prior_s * requested_rate;
  return std::max({job.attained_iterations, prior, 1.0});
}

double expected_remaining_iterations(const JobState& job, const ClusterView& view, PlanOracle& oracle) {
  if (job.declared_iterations > job.attained_iterations) return job.declared_iterations - job.attained_iterations;
  double rate = 0;
  std::set<std::string> types;
  for (std::size_t n = 0; n < view.nodes.size(); ++n)
    if (types.insert(view.nodes[n].type.name).second)
      rate = std::max(rate, oracle.requested_rate(job, view.nodes, static_cast<int>(n)));
  return expected_remaining_iterations(job, view, rate);
}

}  // namespace morph::policy
