// The simulator's accounting, the workload reader's errors and the metrics, on jobs of
// the fixture application whose speeds come from the model (no traces).
#include "libmorph/sim/simulator.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "libmorph/sim/metrics.h"
#include "libmorph/sim/workload.h"
#include "libmorph/util/error.h"
#include "policy_support.h"

namespace morph::sim {
namespace {

using policy::JobState;
using test::job;

// A job whose true length is what it declares.
SimJob sim(JobState j) {
  SimJob s;
  s.steps = j.declared_iterations;
  s.state = std::move(j);
  s.where = "test";
  return s;
}

SimResult run(const std::string& policy_name, const std::vector<SimJob>& jobs, const std::string& cluster = "1x8xbig",
              SimOptions options = {}) {
  policy::PlanOracle oracle = test::make_oracle();
  auto p = policy::make_policy(policy_name);
  return simulate(jobs, test::nodes(cluster), *p, oracle, TraceTruth{}, options);
}

// A policy that decides as `name` does and counts the rounds it is asked; it refuses more
// than `max_rounds` (a simulation that decides every round fails fast instead of running
// for hours), and with `steady` false it never tells the simulator it is steady.
class Counted : public policy::Policy {
 public:
  Counted(const std::string& name, long max_rounds, bool steady = true)
      : inner_(policy::make_policy(name)), max_rounds_(max_rounds), steady_(steady) {}
  std::string name() const override { return inner_->name(); }
  std::vector<policy::Decision> schedule(const policy::ClusterView& view, policy::PlanOracle& oracle) override {
    if (++rounds_ > max_rounds_)
      throw Error(name() + " was asked to decide more than " + std::to_string(max_rounds_) + " rounds");
    return inner_->schedule(view, oracle);
  }
  bool steady(const policy::ClusterView& view, policy::PlanOracle& oracle) override {
    return steady_ && inner_->steady(view, oracle);
  }
  long rounds() const { return rounds_; }

 private:
  std::unique_ptr<policy::Policy> inner_;
  long max_rounds_;
  bool steady_;
  long rounds_ = 0;
};

SimResult run(Counted& policy, const std::vector<SimJob>& jobs, const std::string& cluster, SimOptions options = {}) {
  policy::PlanOracle oracle = test::make_oracle();
  return simulate(jobs, test::nodes(cluster), policy, oracle, TraceTruth{}, options);
}

// The iteration time of `j`'s requested plan on its GPUs of one big node.
double requested_iteration_s(const JobState& j) {
  policy::PlanOracle oracle = test::make_oracle();
  const int gpus = j.requested_plan.gpus();
  return oracle.predict_s(j, j.requested_plan, test::nodes("1x8xbig"), {policy::Slice{0, gpus, j.requested_cpus, 0}});
}

TEST(Simulator, SingleRigidJobTakesQueueingPlusRestartPlusItsWork) {
  const JobState j = job("solo", Sla::best_effort, 4, 1000, 30);
  const SimResult r = run("fifo", {sim(j)});
  ASSERT_EQ(r.jobs.size(), 1u);
  const JobResult& x = r.jobs[0];
  const double work_s = 1000 * requested_iteration_s(j);
  EXPECT_DOUBLE_EQ(x.queue_s(), 30);  // rounds every 60 s: it waits for the one at t=60
  EXPECT_EQ(x.starts, 1);
  EXPECT_NEAR(x.jct_s(), 30 + 260 + work_s, 1e-6);
  EXPECT_NEAR(x.run_seconds, work_s, 1e-6);
  EXPECT_NEAR(x.gpu_seconds, 4 * (260 + work_s), 1e-6);
  EXPECT_EQ(r.predicted_runs, 1);
  EXPECT_EQ(r.measured_runs, 0);
  EXPECT_NEAR(x.predicted_seconds, work_s, 1e-6);
}

// Whatever the policy does with a lone job, its time is queueing, a restart penalty per
// start and the time it progressed.
TEST(Simulator, ElasticJobTimeIsQueueingRestartsAndProgress) {
  for (double penalty : {0.0, 260.0, 1000.0}) {
    SimOptions o;
    o.restart = policy::RestartCosts::uniform(penalty);
    o.interval_s = 45;
    const SimResult r = run("morphling", {sim(job("solo", Sla::best_effort, 2, 20000, 10))}, "1x8xbig", o);
    const JobResult& x = r.jobs[0];
    ASSERT_TRUE(x.finished());
    EXPECT_NEAR(x.jct_s(), x.queue_s() + x.starts * penalty + x.run_seconds, 1e-6) << penalty;
    EXPECT_DOUBLE_EQ(x.queue_s(), 35);
  }
}

// Rounds every 0.7 s: 90 * 0.7 is 62.99999999999999 in binary, short of a submission at
// 63 s. The job is admitted at the next round; the simulation used to loop for ever.
TEST(Simulator, AnIntervalWithoutAnExactBinaryValueStillAdmitsEveryJob) {
  SimOptions o;
  o.interval_s = 0.7;
  o.restart = policy::RestartCosts::uniform(0);
  const SimResult r = run("fifo", {sim(job("late", Sla::best_effort, 2, 100, 63))}, "1x8xbig", o);
  ASSERT_EQ(r.jobs.size(), 1u);
  ASSERT_TRUE(r.jobs[0].finished());
  EXPECT_GE(r.jobs[0].queue_s(), 0);
  EXPECT_LT(r.jobs[0].queue_s(), 0.7 + 1e-9);
}

// Each (re)start costs its own path. On one node, a first start is a start and every
// later one a requeue (another GPU count on the node; the model never changes, so no
// plan changes in place), and a guaranteed job is never preempted: its time is its
// queueing, one start, its requeues and its progress.
TEST(Simulator, EachPathCostsItsOwn) {
  SimOptions o;
  o.restart = policy::RestartCosts{7, 1000, 1000, 50};
  const SimResult lone = run("morphling", {sim(job("whole", Sla::best_effort, 8, 20000, 0))}, "1x8xbig", o);
  ASSERT_TRUE(lone.jobs[0].finished());
  EXPECT_EQ(lone.jobs[0].starts, 1);
  EXPECT_NEAR(lone.jobs[0].jct_s(), lone.jobs[0].queue_s() + 7 + lone.jobs[0].run_seconds, 1e-6);

  const std::vector<SimJob> jobs{sim(job("be", Sla::best_effort, 8, 40000, 0)),
                                 sim(job("g", Sla::guaranteed, 4, 2000, 600))};
  const JobResult g = run("morphling", jobs, "1x8xbig", o).jobs[1];
  ASSERT_TRUE(g.finished());
  ASSERT_GE(g.starts, 2);  // its GPU count changes at least once
  EXPECT_NEAR(g.jct_s(), g.queue_s() + 7 + (g.starts - 1) * 50 + g.run_seconds, 1e-6);
}

// Starts a 16-GPU job on two nodes under ZeRO-Offload, then shrinks it to the first node
// under `shrunk`, once; keeps it as it is after that.
class ShrinksOnce : public policy::Policy {
 public:
  explicit ShrinksOnce(ExecutionPlan shrunk) : shrunk_(shrunk) {}
  std::string name() const override { return "shrinks-once"; }
  std::vector<policy::Decision> schedule(const policy::ClusterView& view, policy::PlanOracle&) override {
    const JobState& j = view.jobs.at(0);
    policy::JobAllocation target = j.current;
    if (!j.running()) {
      target = {{policy::Slice{0, 8, 64, 0}, policy::Slice{1, 8, 64, 0}}, offload(16)};
    } else if (!shrunk_once_ && view.now_s >= j.ready_s) {
      target = {{policy::Slice{0, 8, 64, 0}}, shrunk_};
      shrunk_once_ = true;
    }
    return {{j.id, target}};
  }
  static ExecutionPlan offload(int dp) {
    ExecutionPlan p = test::make_plan(dp, 1, 1, 1, 1, 64 / dp);
    p.zero_stage = 2;
    p.offload = true;
    return p;
  }

 private:
  ExecutionPlan shrunk_;
  bool shrunk_once_ = false;
};

// The simulator charges the path morphd takes: ZeRO-Offload shrunk from 16 GPUs to 8 holds
// twice the offloaded states per GPU, more host memory on the node it keeps than the job's
// record has, so the shrink is a requeue (500 s, not 30 s); without offloading it stays a
// shrink. Its time is its queueing, its start, that restart and its progress.
TEST(Simulator, AShrinkThatNeedsMoreHostMemoryIsChargedAsARequeue) {
  SimOptions o;
  o.restart = policy::RestartCosts{7, 1000, 30, 500};
  for (const auto& [plan, restart_s] : {std::pair{ShrinksOnce::offload(8), 500.0},
                                        std::pair{test::make_plan(8, 1, 1, 1, 1, 8), 30.0}}) {
    ShrinksOnce policy(plan);
    policy::PlanOracle oracle = test::make_oracle();
    const SimResult r = simulate({sim(job("j", Sla::best_effort, 16, 20000, 0))}, test::nodes("2x8xbig"), policy,
                                 oracle, TraceTruth{}, o);
    const JobResult& x = r.jobs.at(0);
    ASSERT_TRUE(x.finished()) << to_string(plan);
    ASSERT_EQ(x.starts, 2) << to_string(plan);
    EXPECT_NEAR(x.jct_s(), x.queue_s() + 7 + restart_s + x.run_seconds, 1e-6) << to_string(plan);
  }
}

// A policy that decides as `name` does and notes, at every round, when each running job's
// last restart is over as the view says (JobState::last_restart_s), and its ready time.
class Noting : public policy::Policy {
 public:
  explicit Noting(const std::string& name) : inner_(policy::make_policy(name)) {}
  std::string name() const override { return inner_->name(); }
  std::vector<policy::Decision> schedule(const policy::ClusterView& view, policy::PlanOracle& oracle) override {
    for (const JobState& j : view.jobs)
      if (j.running()) notes.push_back({view.now_s, j.id, j.last_restart_s, j.ready_s});
    return inner_->schedule(view, oracle);
  }
  struct Note {
    double now_s;
    std::string job;
    double last_restart_s;
    double ready_s;
  };
  std::vector<Note> notes;

 private:
  std::unique_ptr<policy::Policy> inner_;
};

// The payback wait (ClusterView::payback_s) counts as morphd counts it: a start is a
// restart too (morphd journals it), and the wait runs from when the job runs again. Rigid
// FIFO starts a lone job, submitted at 30 s, at the round at 60 s: with a start costing
// 7 s, every later round sees it restarted at 67 s.
TEST(Simulator, AStartIsARestartPaidBackFromWhenTheJobRunsAgain) {
  SimOptions o;
  o.restart = policy::RestartCosts{7, 1000, 1000, 50};
  Noting fifo("fifo");
  policy::PlanOracle oracle = test::make_oracle();
  simulate({sim(job("solo", Sla::best_effort, 4, 1000, 30))}, test::nodes("1x8xbig"), fifo, oracle, TraceTruth{}, o);
  ASSERT_FALSE(fifo.notes.empty());
  for (const Noting::Note& n : fifo.notes) {
    EXPECT_DOUBLE_EQ(n.last_restart_s, 67) << n.now_s;
    EXPECT_DOUBLE_EQ(n.ready_s, 67) << n.now_s;
  }
  // Under Morphling, every running job's last restart is when its latest start or
  // reconfiguration was over: its ready time, 7 s (a start) or 50 s (a requeue) after a
  // round, so always on a round plus its path's cost.
  Noting morphling("morphling");
  const std::vector<SimJob> jobs{sim(job("be", Sla::best_effort, 8, 40000, 0)),
                                 sim(job("g", Sla::guaranteed, 4, 2000, 600))};
  o.payback_s = 120;
  simulate(jobs, test::nodes("1x8xbig"), morphling, oracle, TraceTruth{}, o);
  bool requeued = false;
  for (const Noting::Note& n : morphling.notes) {
    EXPECT_DOUBLE_EQ(n.last_restart_s, n.ready_s) << n.job << " at " << n.now_s;
    const double since_round = std::fmod(n.ready_s, 60);
    EXPECT_TRUE(since_round == 7 || since_round == 50) << n.job << " ready at " << n.ready_s;
    requeued = requeued || since_round == 50;
  }
  EXPECT_TRUE(requeued);
}

// A policy that decides as `name` does and notes, each round, what the model it is given
// predicts for `j`'s requested plan on its GPUs of node 0.
class Predicting : public policy::Policy {
 public:
  Predicting(const std::string& name, JobState j) : inner_(policy::make_policy(name)), job_(std::move(j)) {}
  std::string name() const override { return inner_->name(); }
  std::vector<policy::Decision> schedule(const policy::ClusterView& view, policy::PlanOracle& oracle) override {
    const int gpus = job_.requested_plan.gpus();
    predicted_s.push_back(
        oracle.predict_s(job_, job_.requested_plan, view.nodes, {policy::Slice{0, gpus, job_.requested_cpus, 0}}));
    return inner_->schedule(view, oracle);
  }
  std::vector<double> predicted_s;

 private:
  std::unique_ptr<policy::Policy> inner_;
  JobState job_;
};

// With SimOptions::refit the policy plans, as under morphd, with a model refitted to the
// speeds its jobs report; the jobs still run at what the world measured, and the oracle
// the caller passed (the world's model where the traces lack a configuration) stays as
// it was. A lone job measured 1.5x slower than the model predicts is refitted once, after
// its start, and the policy's prediction moves towards the measurement.
TEST(Simulator, TheOnlineRefitMovesThePolicysModelNotTheWorld) {
  const JobState j = job("solo", Sla::best_effort, 4, 3000, 0);
  const double model_s = requested_iteration_s(j);
  TraceTruth truth;
  truth.add("m", "big", j.requested_plan, {4}, 1.5 * model_s);
  for (const double threshold : {0.0, 0.10}) {
    SimOptions o;
    o.refit.error_threshold = threshold;
    policy::PlanOracle oracle = test::make_oracle();
    Predicting fifo("fifo", j);
    const SimResult r = simulate({sim(j)}, test::nodes("1x8xbig"), fifo, oracle, truth, o);
    ASSERT_TRUE(r.jobs[0].finished());
    EXPECT_EQ(r.measured_runs, 1);
    EXPECT_NEAR(r.jobs[0].run_seconds, 3000 * 1.5 * model_s, 1e-6) << threshold;
    EXPECT_DOUBLE_EQ(oracle.predict_s(j, j.requested_plan, test::nodes("1x8xbig"), {policy::Slice{0, 4, 32, 0}}),
                     model_s);
    ASSERT_GE(fifo.predicted_s.size(), 3u);
    EXPECT_DOUBLE_EQ(fifo.predicted_s.front(), model_s);
    if (threshold == 0) {
      EXPECT_EQ(r.refits, 0);
      EXPECT_DOUBLE_EQ(fifo.predicted_s.back(), model_s);
    } else {
      EXPECT_EQ(r.refits, 1);  // the same point is not refitted twice
      EXPECT_EQ(r.refits_kept, 1);
      EXPECT_GT(fifo.predicted_s.back(), 1.1 * model_s);
      EXPECT_LE(fifo.predicted_s.back(), 1.5 * model_s * (1 + 1e-9));
    }
  }
  SimOptions bad;
  bad.refit.prior_weight = -1;
  policy::PlanOracle oracle = test::make_oracle();
  auto fifo = policy::make_policy("fifo");
  EXPECT_THROW(simulate({sim(j)}, test::nodes("1x8xbig"), *fifo, oracle, truth, bad), Error);
}

// A world model of its own (`morph simulate --world-model in-sample`) gives the speeds the
// traces lack, while the policy plans with the oracle: a world whose forward pass takes
// twice as long runs the job at the world's speed, and the policy never sees it.
// The traces measured one GPU type: their times hold on that type only, and a job on
// another is predicted (a800 times used to be applied to any type).
TEST(Simulator, TracesGiveSpeedsOnlyOnTheGpuTypeTheyMeasured) {
  const JobState j = job("solo", Sla::best_effort, 4, 100, 0);
  TraceTruth truth;
  truth.add("m", "big", j.requested_plan, {4}, 7.5);
  for (const std::string cluster : {"1x8xbig", "2x4xsmall"}) {
    policy::PlanOracle oracle = test::make_oracle();
    auto fifo = policy::make_policy("fifo");
    const SimResult r = simulate({sim(j)}, test::nodes(cluster), *fifo, oracle, truth, {});
    ASSERT_TRUE(r.jobs[0].finished()) << cluster;
    EXPECT_EQ(r.measured_runs, cluster == "1x8xbig" ? 1 : 0) << cluster;
    EXPECT_EQ(r.jobs[0].run_seconds == 100 * 7.5, cluster == "1x8xbig") << cluster << " " << r.jobs[0].run_seconds;
  }
}

// The artifact's placement codes name nodes of 1 to 9 GPUs: a 16-GPU measurement was
// stored under an empty code and answered every lookup on 10 GPUs per node or more.
TEST(Simulator, TracesOfNodesTheirCodesCannotNameAreNotMeasurementsOfOthers) {
  const JobState j = job("solo", Sla::best_effort, 16, 100, 0);
  TraceTruth truth;
  truth.add("m", "big", j.requested_plan, {16}, 1.0);
  EXPECT_EQ(truth.lookup("m", "big", j.requested_plan, {16}), 0);
  EXPECT_EQ(truth.lookup("m", "big", j.requested_plan, {12, 12}), 0);
  EXPECT_EQ(truth.lookup("m", "big", j.requested_plan, {10}), 0);
  truth.add("m", "big", j.requested_plan, {8, 8}, 2.0);
  EXPECT_EQ(truth.lookup("m", "big", j.requested_plan, {8, 8}), 2.0);
}

TEST(Simulator, TheWorldsModelGivesTheSpeedsTheTracesLack) {
  const JobState j = job("solo", Sla::best_effort, 4, 1000, 0);
  const double model_s = requested_iteration_s(j);
  policy::PlanOracle world({{"m", policy::AppProfile{test::app_workload(),
                                                     PerfModel{ForwardModel{0, 20, 1}, PerfParams{}}}}});
  const double world_s = world.predict_s(j, j.requested_plan, test::nodes("1x8xbig"), {policy::Slice{0, 4, 32, 0}});
  ASSERT_GT(world_s, 1.2 * model_s);
  policy::PlanOracle oracle = test::make_oracle();
  Predicting fifo("fifo", j);
  const SimResult r = simulate({sim(j)}, test::nodes("1x8xbig"), fifo, oracle, TraceTruth{}, {}, &world);
  ASSERT_TRUE(r.jobs[0].finished());
  EXPECT_EQ(r.predicted_runs, 1);
  EXPECT_NEAR(r.jobs[0].run_seconds, 1000 * world_s, 1e-6);
  ASSERT_FALSE(fifo.predicted_s.empty());
  for (const double s : fifo.predicted_s) EXPECT_DOUBLE_EQ(s, model_s);
}

TEST(Simulator, PreemptedJobReturnsToTheQueueAndFinishes) {
  SimOptions o;
  o.restart = policy::RestartCosts::uniform(100);
  const std::vector<SimJob> jobs{sim(job("be", Sla::best_effort, 8, 20000, 0)),
                                 sim(job("g", Sla::guaranteed, 8, 500, 1000))};
  const SimResult r = run("morphling", jobs, "1x8xbig", o);
  const JobResult& be = r.jobs[0];
  const JobResult& g = r.jobs[1];
  ASSERT_TRUE(be.finished());
  ASSERT_TRUE(g.finished());
  EXPECT_EQ(g.starts, 1);
  EXPECT_GE(be.starts, 2);
  EXPECT_LE(g.queue_s(), 60);  // the guaranteed job does not wait for the long one
  EXPECT_GT(be.end_s, g.end_s);
  // The preempted job's JCT holds its time off the cluster besides its restarts.
  EXPECT_GT(be.jct_s(), be.queue_s() + be.starts * 100 + be.run_seconds);
}

// A round may preempt the last running job with nothing else to start (Morphling's
// backoff, a guaranteed job not yet placeable): the replay goes on to the next round,
// where the policy starts it again, instead of taking the cluster for idle for good.
TEST(Simulator, ARoundThatPreemptsTheLastRunningJobIsNotTheEnd) {
  class PreemptsOnce : public policy::Policy {
   public:
    std::string name() const override { return "preempts-once"; }
    std::vector<policy::Decision> schedule(const policy::ClusterView& view, policy::PlanOracle& oracle) override {
      std::vector<policy::Decision> d = fifo_->schedule(view, oracle);
      if (!done_ && view.jobs.size() == 1 && view.jobs[0].running() && view.now_s >= view.jobs[0].ready_s) {
        done_ = true;
        d[0].target = {};
      }
      return d;
    }

   private:
    std::unique_ptr<policy::Policy> fifo_ = policy::make_policy("fifo");
    bool done_ = false;
  } policy;
  SimOptions o;
  o.restart = policy::RestartCosts::uniform(100);
  policy::PlanOracle oracle = test::make_oracle();
  const SimResult r = simulate({sim(job("solo", Sla::best_effort, 4, 1000, 0))}, test::nodes("1x8xbig"), policy,
                               oracle, TraceTruth{}, o);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_TRUE(r.jobs[0].finished());
  EXPECT_EQ(r.jobs[0].starts, 2);
}

// A policy that moves its jobs faster than their restarts end: the replay stops after a
// day without progress, naming the policy, where it would have run for ever. Moving the
// job between two nodes keeps it holding GPUs; starting and preempting it in turn does not.
TEST(Simulator, APolicyThatNeverLetsItsJobsRunEndsTheReplay) {
  class Restless : public policy::Policy {
   public:
    explicit Restless(bool preempt) : preempt_(preempt) {}
    std::string name() const override { return preempt_ ? "start-stop" : "restless"; }
    std::vector<policy::Decision> schedule(const policy::ClusterView& view, policy::PlanOracle&) override {
      const JobState& j = view.jobs.at(0);
      const int node = j.running() ? 1 - j.current.slices.front().node : 0;
      policy::JobAllocation target{{policy::Slice{node, 4, 32, 0}}, j.requested_plan};
      if (preempt_ && j.running()) target = {};
      ++rounds;
      return {{j.id, target}};
    }
    long rounds = 0;

   private:
    bool preempt_;
  };
  SimOptions o;
  o.restart = policy::RestartCosts::uniform(100);  // longer than a round (60 s)
  for (const bool preempt : {false, true}) {
    Restless policy(preempt);
    policy::PlanOracle oracle = test::make_oracle();
    try {
      simulate({sim(job("j", Sla::best_effort, 4, 1000, 3600))}, test::nodes("2x8xbig"), policy, oracle,
               TraceTruth{}, o);
      ADD_FAILURE() << policy.name() << ": the replay ended";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(policy.name() + ": no job progressed from 3600 s"), std::string::npos)
          << e.what();
    }
    EXPECT_LE(policy.rounds, 24 * 60 + 2) << policy.name();
  }
}

TEST(Simulator, EveryPolicyFinishesAMixedWorkloadOnAHeterogeneousCluster) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 24; ++i) {
    JobState j = job("j" + std::to_string(i), i % 3 == 0 ? Sla::guaranteed : Sla::best_effort, 1 << (i % 4),
                     500.0 + 997.0 * (i % 7), 120.0 * i);
    j.tenant = i % 2 ? "a" : "b";
    jobs.push_back(sim(j));
  }
  SimOptions o;
  o.quota_gpus = {{"a", 8}};
  for (const std::string& name : policy::policy_names()) {
    const SimResult r = run(name, jobs, "2x8xbig+2x4xsmall", o);
    const Report rep = summarize(r);
    EXPECT_EQ(rep.all.finished, 24) << name;
    EXPECT_TRUE(rep.never_finished.empty()) << name;
    EXPECT_GT(rep.makespan_s, 0) << name;
    EXPECT_EQ(rep.guaranteed.jobs + rep.best_effort.jobs, 24) << name;
  }
}

// `morph simulate --heterogeneous` (JABAS): a long best-effort job that fills the big node
// also takes the idle small one, and finishes sooner; the mixed workload still finishes.
TEST(Simulator, HeterogeneousJobsUseTheIdleGpusOfAnotherType) {
  const std::vector<SimJob> lone = {sim(job("be", Sla::best_effort, 4, 2e5))};
  SimOptions o;
  const JobResult one_type = run("morphling", lone, "1x4xbig+1x4xsmall", o).jobs.front();
  o.heterogeneous_jobs = true;
  const JobResult two_types = run("morphling", lone, "1x4xbig+1x4xsmall", o).jobs.front();
  ASSERT_TRUE(one_type.finished() && two_types.finished());
  EXPECT_LT(two_types.jct_s(), one_type.jct_s() * 0.9) << "JCT " << two_types.jct_s() << " vs " << one_type.jct_s();
  EXPECT_GT(two_types.gpu_seconds / two_types.run_seconds, 7.9) << "it held 8 GPUs";

  std::vector<SimJob> jobs;
  for (int i = 0; i < 24; ++i)
    jobs.push_back(sim(job("j" + std::to_string(i), i % 3 == 0 ? Sla::guaranteed : Sla::best_effort, 1 << (i % 4),
                           500.0 + 997.0 * (i % 7), 120.0 * i)));
  const Report rep = summarize(run("morphling", jobs, "2x8xbig+2x4xsmall", o));
  EXPECT_EQ(rep.all.finished, 24);
}

// A guaranteed job is held to its request until its promise is measured. A request that
// no GPU type here holds (32 GPUs on a 16-GPU cluster) used to keep it waiting for ever
// under the policies that resize jobs; it now runs best-effort on what there is (policies
// that keep GPU counts cannot run it, as they cannot a best-effort one). Under AntMan, a
// guaranteed job beyond its tenant's quota runs opportunistically instead of never.
TEST(Simulator, NoGuaranteedJobWaitsForEverForWhatItCannotBeGiven) {
  for (const char* name : {"morphling", "morphling-r"}) {
    const SimResult r = run(name, {sim(job("big", Sla::guaranteed, 32, 100))}, "2x8xbig");
    ASSERT_EQ(r.jobs.size(), 1u);
    EXPECT_TRUE(r.jobs[0].finished()) << name;
  }
  SimOptions o;
  o.quota_gpus = {{"default", 4}};
  const SimResult r = run("antman", {sim(job("over", Sla::guaranteed, 8, 100))}, "1x8xbig", o);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_TRUE(r.jobs[0].finished());
}

TEST(Simulator, AJobThatCannotRunIsReportedNotLooped) {
  // 16 GPUs requested on an 8-GPU cluster: no policy can start it.
  const SimResult r = run("fifo", {sim(job("huge", Sla::best_effort, 16, 100)), sim(job("ok", Sla::best_effort, 2, 100, 5))});
  const Report rep = summarize(r);
  EXPECT_EQ(rep.all.finished, 1);
  ASSERT_EQ(rep.never_finished.size(), 1u);
  EXPECT_EQ(rep.never_finished[0], "huge");
}

// Issue 10 item 11: a lone job of 1e12 iterations took more than 20 minutes, one policy
// round per simulated minute. The rounds in which nothing can change are skipped: the
// policy decides a handful of them, whatever the job's length.
TEST(Simulator, ALongLoneJobTakesAFewDecidedRoundsNotOnePerInterval) {
  const JobState j = job("long", Sla::best_effort, 8, 1e12, 30);
  const double work_s = 1e12 * requested_iteration_s(j);
  for (const std::string& name : policy::policy_names()) {
    Counted policy(name, 1000);
    const SimResult r = run(policy, {sim(j)}, "1x8xbig");
    const JobResult& x = r.jobs[0];
    ASSERT_TRUE(x.finished()) << name;
    EXPECT_LE(policy.rounds(), 10) << name;
    EXPECT_EQ(r.rounds - r.skipped_rounds, policy.rounds()) << name;
    // Every simulated minute of its run is still a round, decided or skipped.
    EXPECT_NEAR(static_cast<double>(r.rounds), std::ceil(x.end_s / 60) - 1, 1) << name;
    EXPECT_EQ(x.starts, 1) << name;
    EXPECT_NEAR(x.jct_s(), 30 + 260 + x.run_seconds, 1e-9 * x.jct_s()) << name;
    if (name == "fifo") {
      EXPECT_NEAR(x.run_seconds, work_s, 1e-9 * work_s);
    }
  }
}

// Skipping is exact: every policy gives the same results, bit for bit, as when it is
// asked every round, on a workload with quiet stretches, arrivals and preemptions.
TEST(Simulator, SkippedRoundsChangeNoResult) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 16; ++i) {
    JobState j = job("j" + std::to_string(i), i % 4 == 0 ? Sla::guaranteed : Sla::best_effort, 1 << (i % 4),
                     2000.0 + 50000.0 * (i % 5), 7000.0 * i + 13 * (i % 3));
    j.tenant = i % 2 ? "a" : "b";
    jobs.push_back(sim(j));
  }
  SimOptions o;
  o.quota_gpus = {{"a", 8}};
  for (const std::string& name : policy::policy_names()) {
    Counted skipping(name, 1 << 20);
    Counted asked(name, 1 << 20, false);
    const SimResult s = run(skipping, jobs, "2x8xbig+2x4xsmall", o);
    const SimResult a = run(asked, jobs, "2x8xbig+2x4xsmall", o);
    EXPECT_GT(s.skipped_rounds, 0) << name;
    EXPECT_EQ(a.skipped_rounds, 0) << name;
    EXPECT_EQ(s.rounds, a.rounds) << name;
    EXPECT_EQ(s.measured_runs + s.predicted_runs, a.measured_runs + a.predicted_runs) << name;
    ASSERT_EQ(s.jobs.size(), a.jobs.size());
    for (std::size_t k = 0; k < s.jobs.size(); ++k) {
      const JobResult& x = s.jobs[k];
      const JobResult& y = a.jobs[k];
      EXPECT_EQ(x.first_start_s, y.first_start_s) << name << " " << x.name;
      EXPECT_EQ(x.end_s, y.end_s) << name << " " << x.name;
      EXPECT_EQ(x.starts, y.starts) << name << " " << x.name;
      EXPECT_EQ(x.gpu_seconds, y.gpu_seconds) << name << " " << x.name;
      EXPECT_EQ(x.run_seconds, y.run_seconds) << name << " " << x.name;
      EXPECT_EQ(x.predicted_seconds, y.predicted_seconds) << name << " " << x.name;
      EXPECT_EQ(x.slow_seconds, y.slow_seconds) << name << " " << x.name;
    }
  }
}

TEST(Metrics, AveragesPercentilesAndSplits) {
  SimResult r;
  r.policy = "p";
  for (int i = 1; i <= 100; ++i) {
    JobResult j;
    j.name = std::to_string(i);
    j.guaranteed = i <= 10;
    j.submit_s = 10;
    j.first_start_s = 10 + i;
    j.end_s = 10 + 100.0 * i;
    j.starts = 2;
    j.gpu_seconds = 3600;
    j.run_seconds = 10.0 * i;
    r.jobs.push_back(j);
  }
  JobResult never;  // counts for GPU time and restarts, not for the averages of finished jobs
  never.name = "never";
  never.submit_s = 10;
  never.first_start_s = 20;
  never.run_seconds = 1e6;
  r.jobs.push_back(never);
  const Report rep = summarize(r);
  EXPECT_DOUBLE_EQ(rep.all.avg_jct_s, 5050);
  EXPECT_DOUBLE_EQ(rep.all.p99_jct_s, 9900);  // nearest rank: the 99th of 100
  EXPECT_DOUBLE_EQ(rep.all.avg_queue_s, 50.5);
  EXPECT_DOUBLE_EQ(rep.all.avg_progress_s, 505);
  EXPECT_DOUBLE_EQ(rep.all.restarts_per_job, 100.0 / 101);
  EXPECT_DOUBLE_EQ(rep.all.gpu_hours, 100);
  EXPECT_DOUBLE_EQ(rep.makespan_s, 10000);
  EXPECT_EQ(rep.guaranteed.jobs, 10);
  EXPECT_DOUBLE_EQ(rep.guaranteed.avg_jct_s, 550);
  EXPECT_EQ(rep.best_effort.jobs, 91);
  EXPECT_EQ(rep.best_effort.finished, 90);
  EXPECT_EQ(rep.never_finished, std::vector<std::string>{"never"});
  EXPECT_DOUBLE_EQ(rep.guaranteed.avg_progress_s, 55);
}

class WorkloadFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() / ("morph_workload_" + std::to_string(::getpid()) + ".csv");
    std::ofstream(path_) << text;
    return path_.string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

const std::string kColumns = "name,submission_time,duration,application,num_gpus,num_cpus,bandwidth,exec_plan,steps,is_sla";
const std::string kHeader = kColumns + "\n";

std::string error_of(const std::string& path) {
  try {
    read_workload(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(WorkloadFile, ReadsRowsAndOptionalTenants) {
  const std::string p =
      write(kColumns + ",tenant\na,0,10,bert,2,16,0,ga,100,1,alice\nb,5.5,20,vit,1,8,0.0,zero-dp,7,0,bob\n");
  const std::vector<TraceJob> jobs = read_workload(p);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].app, "bert");
  EXPECT_TRUE(jobs[0].guaranteed);
  EXPECT_EQ(jobs[0].tenant, "alice");
  EXPECT_DOUBLE_EQ(jobs[1].submit_s, 5.5);
  EXPECT_EQ(jobs[1].where, p + ":3");
}

TEST_F(WorkloadFile, ReadsAnOptionalPartitionColumn) {
  const std::string p = write(kColumns + ",partition\na,0,10,bert,2,16,0,ga,100,1,a100+v100\nb,5,20,vit,1,8,0,ga,7,0,\n");
  const std::vector<TraceJob> jobs = read_workload(p);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].partition, "a100+v100");
  EXPECT_EQ(jobs[1].partition, "");  // the default partition
  EXPECT_EQ(read_workload(write(kHeader + "a,0,10,bert,2,16,0,ga,100,1\n")).front().partition, "");
}

TEST_F(WorkloadFile, MalformedRowsNameFileAndLine) {
  std::string p = write(kHeader + "a,0,10,bert,2,16,0,ga,100,0\nb,soon,10,bert,2,16,0,ga,100,0\n");
  EXPECT_NE(error_of(p).find(p + ":3"), std::string::npos) << error_of(p);
  EXPECT_NE(error_of(p).find("submission_time"), std::string::npos) << error_of(p);
  p = write(kHeader + "a,0,10,bert,0,16,0,ga,100,0\n");
  EXPECT_NE(error_of(p).find(p + ":2"), std::string::npos) << error_of(p);
  p = write(kHeader + "a,0,10,bert,2,16,0,ga,100,0\na,1,10,bert,2,16,0,ga,100,0\n");
  EXPECT_NE(error_of(p).find("appears twice"), std::string::npos) << error_of(p);
  p = write(kHeader + "a,0,10,bert,2,16,0,ga,100\n");
  EXPECT_NE(error_of(p).find(p + ":2"), std::string::npos) << error_of(p);
  p = write("name,submission_time\nx,1\n");
  EXPECT_NE(error_of(p).find("duration"), std::string::npos) << error_of(p);
  p = write(kHeader);
  EXPECT_NE(error_of(p).find("no jobs"), std::string::npos) << error_of(p);
  EXPECT_NE(error_of("/nonexistent/w.csv").find("/nonexistent/w.csv"), std::string::npos);
}

}  // namespace
}  // namespace morph::sim
