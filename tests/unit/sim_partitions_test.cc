// `morph simulate --partitions`: jobs bound to Slurm partitions of the simulated nodes
// (sim/partitions.h) get the nodes, applications and bounds morphd would give them, and
// no policy runs them elsewhere.
#include "libmorph/sim/partitions.h"

#include <gtest/gtest.h>

#include "libmorph/cluster/slurm_partitions.h"
#include "libmorph/util/error.h"
#include "policy_support.h"

namespace morph::sim {
namespace {

using policy::JobState;
using test::job;

// Two big nodes (node001, node002) and a small one (node003).
const std::string kCluster = "2x8xbig+1x4xsmall";
const char* kPartitions =
    "PartitionName=all Nodes=node[001-003] Default=YES\n"
    "PartitionName=one Nodes=node001\n"
    "PartitionName=small Nodes=node003\n";

SimPartitions partitions(const char* text = kPartitions) {
  return SimPartitions(parse_slurm_partitions(text, "slurm.conf", ".", nullptr), test::nodes(kCluster),
                       test::policy_cluster());
}

SimJob sim(JobState j, const std::string& partition) {
  SimJob s;
  s.steps = j.declared_iterations;
  s.state = std::move(j);
  s.where = "w.csv:2";
  s.partitions = partition;
  return s;
}

std::string bind_error(const SimPartitions& p, SimJob j) {
  std::vector<SimJob> jobs = {std::move(j)};
  try {
    p.bind(jobs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SimPartitions, AJobOfAPartitionGetsItsNodesAndAnApplicationBoundByThem) {
  std::vector<SimJob> jobs = {sim(job("a", Sla::best_effort, 8, 100), "one"),
                              sim(job("b", Sla::best_effort, 8, 100), ""),
                              sim(job("c", Sla::best_effort, 4, 100), "one+small")};
  const SimPartitions p = partitions();
  p.bind(jobs);
  EXPECT_EQ(jobs[0].state.app, "m:pone");
  EXPECT_EQ(jobs[0].state.nodes_allowed, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(jobs[1].state.app, "m");  // the default partition holds every node
  EXPECT_TRUE(jobs[1].state.nodes_allowed.empty());
  EXPECT_EQ(jobs[2].state.app, "m:pone+small");
  EXPECT_EQ(jobs[2].state.nodes_allowed, (std::vector<bool>{true, false, true}));

  const auto profiles = p.with_bound_apps(test::make_oracle().apps(), jobs);
  ASSERT_EQ(profiles.size(), 3u);
  const policy::AppProfile& one = profiles.at("m:pone");
  EXPECT_EQ(one.gpu_types, std::vector<std::string>{"big"});
  EXPECT_EQ(one.nodes_of_type, (std::map<std::string, int>{{"big", 1}}));
  EXPECT_FALSE(one.one_gpu_type);
  const policy::AppProfile& both = profiles.at("m:pone+small");
  EXPECT_TRUE(both.one_gpu_type);  // Slurm starts it in one of the two
  EXPECT_EQ(both.nodes_of_type, (std::map<std::string, int>{{"big", 1}}));  // small: its one node
  EXPECT_TRUE(both.gpu_types.empty());
  EXPECT_EQ(measured_app("m:pone+small"), "m");
  EXPECT_EQ(measured_app("m"), "m");
}

TEST(SimPartitions, BadBindingsNameTheRowAndWhatIsWrong) {
  const SimPartitions p = partitions();
  std::string e = bind_error(p, sim(job("a", Sla::best_effort, 8, 100), "nope"));
  EXPECT_NE(e.find("w.csv:2"), std::string::npos) << e;
  EXPECT_NE(e.find("partition 'nope' is not in --partitions"), std::string::npos) << e;
  e = bind_error(p, sim(job("a", Sla::best_effort, 8, 100), "one+nope"));
  EXPECT_NE(e.find("partition 'nope' is not in --partitions"), std::string::npos) << e;  // the unknown one
  e = bind_error(p, sim(job("a", Sla::best_effort, 16, 100), "one"));
  EXPECT_NE(e.find("requests 16 GPUs; partition 'one' lets a job have at most 8"), std::string::npos) << e;
  e = bind_error(partitions("PartitionName=one Nodes=node001\n"), sim(job("a", Sla::best_effort, 8, 100), ""));
  EXPECT_NE(e.find("no Default=YES"), std::string::npos) << e;
  e = bind_error(partitions("PartitionName=far Nodes=elsewhere Default=YES\n"), sim(job("a", Sla::best_effort, 8, 100), ""));
  EXPECT_NE(e.find("holds none of the simulated nodes"), std::string::npos) << e;
  // Two big nodes in the default partition: 16 GPUs fit.
  EXPECT_EQ(bind_error(p, sim(job("a", Sla::best_effort, 16, 100), "")), "");
}

// Two jobs of a one-node partition share its 8 GPUs (in turns, or shrunk side by side)
// while the other big node idles; unbound, they hold more than 8 GPUs at once. The
// simulator fails a policy that places a job outside its partitions.
TEST(SimPartitions, JobsOfAOneNodePartitionShareItsGpusUnderEveryPolicy) {
  for (const std::string& name : policy::policy_names()) {
    for (const bool bound : {false, true}) {
      std::vector<SimJob> jobs = {sim(job("a", Sla::best_effort, 8, 20000), bound ? "one" : ""),
                                  sim(job("b", Sla::best_effort, 8, 20000, 1), bound ? "one" : "")};
      const SimPartitions p = partitions();
      p.bind(jobs);
      policy::PlanOracle oracle(p.with_bound_apps(test::make_oracle().apps(), jobs));
      auto policy = policy::make_policy(name);
      const SimResult r = simulate(jobs, test::nodes(kCluster), *policy, oracle, TraceTruth{}, SimOptions{});
      const JobResult& a = r.jobs[0];
      const JobResult& b = r.jobs[1];
      ASSERT_TRUE(a.finished() && b.finished()) << name;
      // GPU time held against the 8 GPUs of one node over the whole run.
      const double span_s = std::max(a.end_s, b.end_s) - std::min(a.first_start_s, b.first_start_s);
      if (bound)
        EXPECT_LE(a.gpu_seconds + b.gpu_seconds, 8 * span_s + 1e-6) << name;
      else
        EXPECT_GT(a.gpu_seconds + b.gpu_seconds, 8 * span_s + 1) << name;
    }
  }
}

}  // namespace
}  // namespace morph::sim
