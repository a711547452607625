// Event-driven replay of a workload under a policy: jobs arrive at their submission time,
// the policy runs every `interval_s` seconds (Morphling's artifact: 60 s), every start
// and restart costs `restart` seconds, by its path, on its GPUs without progress (260 s),
// and jobs progress at their measured iteration time where the traces have it and at the
// world's model's otherwise (the policy's starting models unless told). With
// SimOptions::refit, the policy's models are refitted online from the speeds the jobs run
// at, as morphd refits them from what its jobs report; the world's never change. Rounds
// in which nothing can change (the policy says it is steady, policy::Policy::steady) are
// skipped up to the next arrival or completion.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "libmorph/policy/model_refit.h"
#include "libmorph/policy/policy.h"
#include "libmorph/sim/truth.h"

namespace morph::sim {

// Where a simulation stands, for a progress display.
struct SimProgress {
  double now_s = 0;  // simulated time
  int finished = 0;  // jobs
  int jobs = 0;
  long rounds = 0;
};

struct SimOptions {
  policy::RestartCosts restart;  // per path (policy/restart_cost.h)
  double payback_s = 0;          // ClusterView::payback_s (morphd: RestartPenaltySeconds)
  bool restart_backoff = true;   // ClusterView::restart_backoff (morph.conf RestartBackoff)
  double min_reconfigure_gain = 0.05;
  double interval_s = 60;
  std::map<std::string, int> quota_gpus;  // guaranteed GPUs per tenant
  double starvation_limit_s = 0;          // ClusterView::starvation_limit_s
  double unknown_length_prior_s = 900;   // ClusterView::unknown_length_prior_s
  bool heterogeneous_jobs = false;        // ClusterView::heterogeneous_jobs
  // morphd's online refit (model_refit.h) of the models the policy plans with, in a copy:
  // the oracle passed to simulate() stays as it is. error_threshold 0: none (morphd:
  // RefitErrorThreshold).
  policy::RefitOptions refit{.error_threshold = 0};
  // Called after every round the policy decides (none when empty).
  std::function<void(const SimProgress&)> on_round;
};

struct JobResult {
  std::string name;
  bool guaranteed = false;
  int requested_gpus = 0;
  double submit_s = 0;
  double first_start_s = -1;  // -1: never started
  double end_s = -1;          // -1: never finished
  int starts = 0;             // starts and restarts
  double gpu_seconds = 0;        // GPU time held, restarts included
  double run_seconds = 0;        // time spent making progress
  double predicted_seconds = 0;  // of which at a speed the model predicted
  double slow_seconds = 0;       // of which a guaranteed job ran slower than its request would

  bool finished() const { return end_s >= 0; }
  double jct_s() const { return end_s - submit_s; }
  double queue_s() const { return first_start_s - submit_s; }
  int restarts() const { return starts > 0 ? starts - 1 : 0; }
};

struct SimResult {
  std::string policy;
  std::vector<JobResult> jobs;
  long rounds = 0;
  long skipped_rounds = 0;  // of `rounds`, those decided without the policy: it was steady
  long measured_runs = 0;   // (re)starts whose speed the traces measured
  long predicted_runs = 0;  // (re)starts whose speed the model predicted
  long refits = 0;          // online refits tried (SimOptions::refit)
  long refits_kept = 0;     // of which the policy planned with from then on
  double wall_s = 0;        // time the simulation took
};

// The jobs of a simulation, with their requests resolved against the applications.
struct SimJob {
  policy::JobState state;  // id, app, tenant, SLA, request, what is known of its length
  double steps = 0;        // the iterations it trains: its true length, the simulator's alone
  double duration_s = 0;   // its run time on its request in the trace (0: unknown)
  std::string where;       // workload file:line
  std::string partitions;  // its workload row's (sim/partitions.h); "": the default
};

// `oracle`: the models the policy starts with. The speeds `truth` lacks (all of them when
// it is empty) come from `world`, else from `oracle`'s starting models. Throws on invalid
// options.
SimResult simulate(const std::vector<SimJob>& jobs, const std::vector<policy::NodeState>& nodes,
                   policy::Policy& policy, policy::PlanOracle& oracle, const TraceTruth& truth,
                   const SimOptions& options, policy::PlanOracle* world = nullptr);

}  // namespace morph::sim
