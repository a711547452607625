// Online refit (Morphling §4, "Continuous model fitting": the model is "updated online
// using metrics collected in real training runs when the prediction error exceeds a
// threshold"). Each round, per model, the iteration times its jobs have measured (those
// running now and those before them) against what the model in use predicts for them; above RefitErrorThreshold, a
// warm-start refit (libmorph/refit/refit.h) on those points and the points the model was
// fitted on (its evidence), which the scheduler uses from then on. morphd refits so
// (daemon/scheduler.h), and `morph simulate` does the same from the speeds its jobs run at.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "libmorph/config/morph_conf.h"
#include "libmorph/perf/perf_model.h"
#include "libmorph/policy/cluster_view.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/refit/refit.h"

namespace morph::policy {

struct RefitOptions {
  double error_threshold = PolicyKnobs{}.refit_error_threshold;  // RefitErrorThreshold; 0: never refit
  double prior_weight = kDefaultPriorWeight;  // FitOptions::prior_weight around the model in use
  // RefitPointMaxAgeDays in seconds: a measurement older than this is forgotten (the GPUs,
  // drivers or NCCL may have changed since); 0: kept until newer ones of its configuration push it out.
  double max_age_s = PolicyKnobs{}.refit_point_max_age_s;

  // Ceres-style: false with a message naming the bad member.
  bool is_valid(std::string* error) const;
};

struct ModelRefit {
  std::string model;                       // catalog name
  PerfModel perf;                          // the refitted model (forward: one application's)
  std::set<std::string> configurations;    // the points: application, plan and allocation
  std::set<std::string> implausible;       // left out: off by more than kImplausibleRatio
  double error_before = 0;                 // mean |predicted - measured| / measured over the points
  double error_after = 0;
  double rmsle = 0;                        // of the fit
  double evidence_error_before = 0;        // over the model's profile (gated_refit)
  double evidence_error_after = 0;
  bool accepted = false;                   // the refit predicts the points better, its profile within bounds
};

// One job's latest iteration time on one configuration, as the refitter remembers it.
// morphd keeps these in its state database (refit_points), so that a restarted morphd
// refits from what its predecessor's jobs measured as well (daemon/online_params.h).
struct RefitPoint {
  std::string model;      // catalog name
  std::string app;        // JobState::app
  std::string job;        // JobState::id
  Workload workload;
  ForwardModel forward;   // of the application's model in use
  ExecutionPlan plan;
  Allocation allocation;
  double iteration_s = 0;
  double measured_at_s = 0;  // ClusterView::now_s of the round that last saw it
};

// The configuration a point measured: "APP PLAN on GPUS (N CPUs per GPU)".
std::string configuration_key(const RefitPoint& point);

// What one model's jobs have measured, as the online refit remembers it: by application
// and configuration (application, plan, allocation), each job's latest iteration time.
// A finished job's measurement stays, so that each refit fits every configuration seen
// so far (as the online-refit curve does, libmorph/artifact/online_refit.h) and not only
// the jobs running at that moment, which would pull the model back and forth as they come
// and go.
class ModelRefitter {
 public:
  static constexpr std::size_t kJobsPerConfiguration = 16;

  // Throws on invalid options.
  explicit ModelRefitter(RefitOptions options);

  // The refits this round calls for. The running jobs of `view` that measured their
  // iteration time (JobState::measured_iteration_s) join what is remembered; `apps` holds
  // the model in use of each JobState::app. A model is refit when its remembered points
  // (per configuration, the median of its jobs') are mispredicted by more than the
  // threshold on average and include a configuration its last refit did not see: the
  // same evidence twice would pull the model past its prior. Jobs spanning two GPU types
  // and jobs that adapt their batch are no points of a model.
  std::vector<ModelRefit> round(const ClusterView& view, const std::map<std::string, AppProfile>& apps);

  // The points the last round() added or changed (a job's first measurement of a
  // configuration, or a new value), and those it saw again half of max_age_s after they
  // were last learned or restored: what morphd writes to its state database, which
  // expires a point max_age_s after its writing.
  const std::vector<RefitPoint>& learned() const { return learned_; }

  // A point remembered before, as if a round had observed it (morphd: from its state
  // database at start). Restored oldest first, the last kJobsPerConfiguration of a
  // configuration stay; the next round forgets those older than max_age_s. Throws on a
  // point without a model, an application or a positive time.
  void restore(const RefitPoint& point);

  // morph.conf's options read again (morphd on SIGHUP); what is remembered stays. Throws
  // on invalid options, leaving the old ones.
  void set_options(RefitOptions options);

  // What is remembered of `model`: by application and configuration, the latest iteration
  // time of each job that ran it, oldest first.
  std::map<std::string, std::map<std::string, std::vector<double>>> remembered(const std::string& model) const;

 private:
  struct Measurement {
    std::string job;
    double iteration_s = 0;  // the job's latest
    double at_s = 0;         // when a round last saw it
    double stored_s = 0;     // when learned() or restore() last had it
  };
  struct Configuration {
    ExecutionPlan plan;
    Allocation allocation;
    // The jobs that measured it last at the end: a long-lived daemon keeps the last
    // kJobsPerConfiguration.
    std::vector<Measurement> measured;
  };
  struct Application {
    Workload workload;
    ForwardModel forward;
    std::map<std::string, Configuration> configurations;  // by key
  };

  void observe(const ClusterView& view, const std::map<std::string, AppProfile>& apps);
  // Drops measurements older than max_age_s before `now_s`, and configurations left without any.
  void forget_older_than(double now_s);
  // `point` into its configuration; false when that job's measurement there was already it.
  bool remember(const RefitPoint& point);

  RefitOptions options_;
  std::map<std::string, std::map<std::string, Application>> observed_;  // by model, by application
  std::map<std::string, std::set<std::string>> refit_on_;  // by model: the configurations of its last refit
  std::vector<RefitPoint> learned_;                        // by the last round
};

// The refitted parameters and prior of `refit.model` in every application of that model;
// the applications' forward models stay their own.
void use_refit(std::map<std::string, AppProfile>& apps, const std::string& model, const PerfModel& refit);

// "refit MODEL: error X% -> Y% on N points" (and that it was kept when not accepted).
std::string describe(const ModelRefit& refit);

}  // namespace morph::policy
