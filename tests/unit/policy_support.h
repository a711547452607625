// Fixtures of the policy and simulator tests: hand-made clusters of the test GPU types,
// one compute-bound application "m" (8 layers, global batch 64) and jobs of it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "libmorph/model/model_spec.h"
#include "libmorph/policy/placement.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/policy/policy.h"
#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph::test {

inline const Cluster& policy_cluster() {
  static const Cluster c = test_cluster();
  return c;
}

inline std::vector<policy::NodeState> nodes(const std::string& spec) {
  return policy::nodes_from_spec(spec, policy_cluster(), "test");
}

inline Workload app_workload() {
  return Workload{ModelSpec{"m", 8, 1024, 16, 512, 1000, frenzy_parameter_count(8, 1024, 1000)}, 64, 512};
}

// 10 ms of forward per sample: iterations scale almost linearly with data parallelism.
inline policy::PlanOracle make_oracle() {
  policy::AppProfile app{app_workload(), PerfModel{ForwardModel{0, 10, 1}, PerfParams{}}};
  return policy::PlanOracle({{"m", app}});
}

// A pending job of "m" asking for `gpus` GPUs with plain data parallelism.
inline policy::JobState job(const std::string& id, Sla sla, int gpus, double iterations, double submit_s = 0) {
  policy::JobState j;
  j.id = id;
  j.app = "m";
  j.sla = sla;
  j.workload = app_workload();
  j.requested_plan = make_plan(gpus, 1, 1, 1, 1, 64 / gpus);
  j.requested_cpus = 8 * gpus;
  j.submit_time_s = submit_s;
  j.declared_iterations = iterations;  // known exactly
  return j;
}

// `j` running its requested plan on `gpus` GPUs of node `node` since `since_s`.
inline policy::JobState running(policy::JobState j, int node, double since_s = 0) {
  const int gpus = j.requested_plan.gpus();
  j.current.slices = {policy::Slice{node, gpus, 8 * gpus, 0}};
  j.current.plan = j.requested_plan;
  j.ready_s = since_s;
  return j;
}

inline const policy::JobAllocation& target_of(const std::vector<policy::Decision>& decisions, const std::string& id) {
  for (const policy::Decision& d : decisions)
    if (d.job == id) return d.target;
  throw Error("no decision for job " + id);
}

// Runs one round of `policy_name` and checks that its decisions fit the cluster.
inline std::vector<policy::Decision> round(const std::string& policy_name, const policy::ClusterView& view,
                                           policy::PlanOracle& oracle) {
  std::vector<policy::Decision> d = policy::make_policy(policy_name)->schedule(view, oracle);
  EXPECT_EQ(d.size(), view.jobs.size());
  policy::NodePool pool(view.nodes);
  for (const policy::Decision& x : d) pool.take(x.target.slices);  // throws on over-allocation
  return d;
}

}  // namespace morph::test
