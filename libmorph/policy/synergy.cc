// Synergy (Mohan et al., OSDI 2022): GPUs and plans stay as requested; CPUs and memory
// follow each job's sensitivity instead of a fixed ratio. Simplified to what our model
// sees: every job gets its node's fair CPU share per GPU, and jobs whose plan offloads
// to the CPU take the spare CPUs of their nodes while that speeds them up. Scheduling
// order is FIFO with backfilling, Synergy's default base policy.
#include "libmorph/policy/policies.h"
#include "libmorph/policy/rigid.h"

namespace morph::policy {
namespace {

class Synergy : public Policy {
 public:
  std::string name() const override { return "synergy"; }
  std::vector<Decision> schedule(const ClusterView& view, PlanOracle& oracle) override {
    return backfill_round(view, oracle, {CpuRule::share, true});
  }
  bool steady(const ClusterView& view, PlanOracle& oracle) override { return rigid_steady(view, oracle); }
};

}  // namespace

std::unique_ptr<Policy> make_synergy() { return std::make_unique<Synergy>(); }

}  // namespace morph::policy
