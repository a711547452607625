// Morphling (seed 000 §5, Algorithm 1) and its variants Morphling-E, -R and -N (§7.3):
// one elastic round each, differing only in what a job may change.
#include "libmorph/policy/elastic.h"
#include "libmorph/policy/policies.h"

namespace morph::policy {
namespace {

class Morphling : public Policy {
 public:
  Morphling(std::string name, ElasticOptions options) : name_(std::move(name)), options_(options) {}
  std::string name() const override { return name_; }
  std::vector<Decision> schedule(const ClusterView& view, PlanOracle& oracle) override {
    return elastic_round(view, oracle, options_);
  }
  bool steady(const ClusterView& view, PlanOracle& oracle) override { return elastic_steady(view, oracle, options_); }

 private:
  std::string name_;
  ElasticOptions options_;
};

ElasticOptions with(FreedomRule freedom, bool replan) {
  ElasticOptions o;
  o.freedom = freedom;
  o.replan = replan;
  return o;
}

}  // namespace

std::unique_ptr<Policy> make_morphling() {
  return std::make_unique<Morphling>("morphling", with(FreedomRule::any, true));
}
std::unique_ptr<Policy> make_morphling_e() {
  return std::make_unique<Morphling>("morphling-e", with(FreedomRule::fixed, true));
}
// Morphling-R scales 3D-parallel jobs along DP, as Sia claims to (§7.3).
std::unique_ptr<Policy> make_morphling_r() {
  return std::make_unique<Morphling>("morphling-r", with(FreedomRule::scale_dp, false));
}
std::unique_ptr<Policy> make_morphling_n() {
  return std::make_unique<Morphling>("morphling-n", with(FreedomRule::fixed, false));
}

}  // namespace morph::policy
