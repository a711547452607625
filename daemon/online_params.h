// The online refit in the state database, so that what morphd's jobs taught it survives a
// restart: its parameters (fitted_params, source "online"), each accepted refit, of which
// a restarted morphd takes up the latest of each model; and the points it fits
// (refit_points), each job's latest iteration time per configuration, which the restarted
// refitter remembers as its predecessor did (libmorph/policy/model_refit.h).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/view_builder.h"
#include "daemon/store/state_store.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_params.h"
#include "libmorph/policy/model_refit.h"

namespace morph::daemon {

inline constexpr const char* kOnlineRefitSource = "online";

void record_refit(store::StateStore& state, const policy::ModelRefit& refit, double now_s);

// By catalog model name: the models whose latest fitted parameters are an online refit, as
// it recorded them (parameters, evidence, the prior of its fit).
std::map<std::string, PerfModel> load_online_refits(const store::StateStore& state, const Catalog& catalog);

// What the refitter learned in a round (ModelRefitter::learned), stamped `now_s`; each
// configuration keeps the newest ModelRefitter::kJobsPerConfiguration, as the refitter does,
// and with `max_age_s` > 0 (RefitPointMaxAgeDays) points recorded longer ago are deleted.
// A running job's unchanged measurement is not recorded again: after a restart morphd
// sees it anew from the job.
void record_refit_points(store::StateStore& state, std::span<const policy::RefitPoint> points, double now_s,
                         double max_age_s);

// What rounds learned (their points and refits) until the state database has stored it:
// a round the database could not take (full, busy) is stored with a later one, where it
// used to stay in use only until morphd restarted. The newest kMaxRounds are kept.
class RefitRecorder {
 public:
  static constexpr std::size_t kMaxRounds = 1000;
  void add(std::vector<policy::RefitPoint> points, std::vector<policy::ModelRefit> refits, double now_s);
  // Stores the rounds kept, oldest first, each stamped with its own time; throws what the
  // database threw, keeping what it did not store.
  void store(store::StateStore& state, double max_age_s);
  std::size_t rounds() const { return rounds_.size(); }

 private:
  struct Round {
    std::vector<policy::RefitPoint> points;  // cleared once stored
    std::vector<policy::ModelRefit> refits;  // the stored ones erased
    double now_s = 0;
  };
  std::deque<Round> rounds_;
};

// The points recorded, oldest first, for ModelRefitter::restore, each with its
// application's forward model as `context` gives it. A point whose model, node type, GPU
// count or plan this catalog and morph.conf no longer know is left out, with a line in
// `skipped` naming the job and why. `model` non-empty: that catalog model's points only.
std::vector<policy::RefitPoint> load_refit_points(const store::StateStore& state, const ViewContext& context,
                                                  std::vector<std::string>* skipped, std::string_view model = {});

}  // namespace morph::daemon
