// Sia (Jayaram Subramanya et al., SOSP 2023) as Morphling's §7.3 runs it: GPUs scale along
// data parallelism only, plans keep their family, 3D-parallel requests keep their GPUs and
// plan; every waiting job is admitted at its smallest configuration (Sia's fairness), and
// spare GPUs go where normalised goodput rises most. Simplified: one greedy round instead
// of Sia's integer program, and our performance model instead of Sia's goodput model.
#include "libmorph/policy/elastic.h"
#include "libmorph/policy/policies.h"

namespace morph::policy {
namespace {

class Sia : public Policy {
 public:
  std::string name() const override { return "sia"; }
  std::vector<Decision> schedule(const ClusterView& view, PlanOracle& oracle) override {
    return elastic_round(view, oracle, options());
  }
  bool steady(const ClusterView& view, PlanOracle& oracle) override { return elastic_steady(view, oracle, options()); }

 private:
  static ElasticOptions options() {
    ElasticOptions o;
    o.objective = Objective::normalized_goodput;
    o.freedom = FreedomRule::sia;
    o.admit_at_minimum = true;
    o.measured_guarantee = false;  // Sia has no guarantee of its own
    o.restart_backoff = false;     // nor a backoff: its goodput prices each restart alone
    return o;
  }
};

}  // namespace

std::unique_ptr<Policy> make_sia() { return std::make_unique<Sia>(); }

}  // namespace morph::policy
