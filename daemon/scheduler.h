// One scheduling round of morphd: finish the reconfigurations under way (journal), build
// the policy's view of what Slurm says and what the jobs measured, refit the models that
// mispredict them (libmorph/policy/model_refit.h), run the policy (the same object `morph simulate`
// drives) and start the reconfigurations it decides, leaving alone the jobs that are
// being reconfigured. The policy lets a job pay back its last restart before it grows
// (ClusterView::payback_s, RestartPenaltySeconds; the journal says when that restart
// was). Each decision is recorded with its alternatives; a pending
// job left waiting, only when the reason it waits changes.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/reconfigurer.h"
#include "daemon/size_caps.h"
#include "daemon/view_builder.h"
#include "libmorph/policy/model_refit.h"
#include "libmorph/policy/policy.h"

namespace morph::daemon {

struct RoundReport {
  int jobs = 0;               // Morph jobs in the view
  int started = 0;            // reconfigurations started this round
  std::vector<std::string> lines;  // what was decided, skipped and why
  std::vector<policy::ModelRefit> refits;  // accepted online refits, in use from this round on
  std::vector<policy::RefitPoint> learned; // what the online refit learned this round (ModelRefitter::learned)
};

class Scheduler {
 public:
  Scheduler(ViewContext context, std::unique_ptr<policy::Policy> policy, Reconfigurer& reconfigurer, Journal& journal);
  // `model` as refitted before (morphd: the latest online refit in the state database):
  // its parameters and prior in place of PerfStore's.
  void use_refit(const std::string& model, const PerfModel& refit);
  // What the online refit remembered before (morphd: refit_points of the state database),
  // oldest first.
  void restore(const std::vector<policy::RefitPoint>& points);
  // morph.conf, the catalog and the fitted models read again (morphd on SIGHUP): the next
  // rounds see `context`, which must outlive them; online refits and what they remember,
  // size caps and forecasts stay.
  void reload(ViewContext context);
  // The limits of job sizes Slurm refused (size_caps.h), as morphd keeps them.
  SizeCaps& size_caps() { return caps_; }
  // `dry_run`: decide and report, take no action. `histories`: what the state database
  // holds about the snapshot's Morph jobs.
  RoundReport round(const ClusterSnapshot& snapshot, bool dry_run = false, const JobHistories& histories = {});

 private:
  policy::PlanOracle& oracle(const std::map<std::string, policy::AppProfile>& apps);
  void record_waits(const BuiltView& built, const std::vector<policy::Decision>& decisions,
                    const std::set<std::uint32_t>& busy, double now_s);
  void refit(BuiltView& built, RoundReport& report);

  std::optional<ViewContext> context_;  // references: replaced by reload(), not assigned
  std::map<std::string, PerfModel> refitted_;              // by catalog model name
  policy::ModelRefitter refitter_;  // remembers what the jobs measured
  std::unique_ptr<policy::Policy> policy_;
  Reconfigurer& reconfigurer_;
  Journal& journal_;
  std::set<std::string> oracle_apps_;
  std::unique_ptr<policy::PlanOracle> oracle_;  // kept while the applications stay the same
  std::map<std::string, int> forecast_epochs_;  // by job: the epoch of its last reported forecast
  SizeCaps caps_;  // the sizes Slurm refused, by job
};

}  // namespace morph::daemon
