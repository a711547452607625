// A scheduling policy: each round it maps every job of a ClusterView to where it should
// run next. morphd and `morph simulate` drive the same policies through this interface.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"

namespace morph::policy {

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // One decision per job of `view`, in its order. A running job whose target differs
  // from its current allocation is checkpointed and restarted (or preempted when the
  // target is empty); a pending job with a target starts.
  virtual std::vector<Decision> schedule(const ClusterView& view, PlanOracle& oracle) = 0;
  // Whether schedule() decides for `view` as it will in every later round in which only
  // time passes: no job arrives or finishes, and the running jobs, past their restarts
  // and measured, only progress (their attained iterations grow, waiting jobs wait
  // longer, nothing else changes).
  // The simulator then skips those rounds without asking, so a policy says yes only
  // where that holds for any remaining work. The default promises nothing.
  virtual bool steady(const ClusterView& /*view*/, PlanOracle& /*oracle*/) { return false; }
};

// morphling, morphling-e, morphling-r, morphling-n, fifo, synergy, sia, antman.
// Throws morph::Error naming the known policies for any other name.
std::unique_ptr<Policy> make_policy(std::string_view name);
const std::vector<std::string>& policy_names();

}  // namespace morph::policy
