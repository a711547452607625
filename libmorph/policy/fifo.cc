// FIFO: the rigid black-box scheduler most clusters run — requested GPUs, CPUs and plan,
// submission order, EASY backfilling.
#include "libmorph/policy/policies.h"
#include "libmorph/policy/rigid.h"

namespace morph::policy {
namespace {

class Fifo : public Policy {
 public:
  std::string name() const override { return "fifo"; }
  std::vector<Decision> schedule(const ClusterView& view, PlanOracle& oracle) override {
    return backfill_round(view, oracle, {CpuRule::requested, false});
  }
  bool steady(const ClusterView& view, PlanOracle& oracle) override { return rigid_steady(view, oracle); }
};

}  // namespace

std::unique_ptr<Policy> make_fifo() { return std::make_unique<Fifo>(); }

}  // namespace morph::policy
