// morphd's online refit (libmorph/policy/model_refit.h): when it happens, what it changes, and
// that the view takes the refitted parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include <unistd.h>

#include "libmorph/perf/perf_store.h"
#include "libmorph/policy/model_refit.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/util/error.h"
#include "tests/unit/daemon_support.h"

namespace morph::daemon {
namespace {

using policy::ModelRefit;
using policy::ModelRefitter;
using policy::RefitOptions;

// A round of `refitter` on the view morphd builds.
std::vector<ModelRefit> refit_round(ModelRefitter& refitter, const BuiltView& built) {
  return refitter.round(built.view, built.apps);
}

const ExecutionPlan kEight = test::make_plan(8, 1, 1, 1, 1, 2);
const ExecutionPlan kFour = test::make_plan(4, 1, 1, 1, 1, 4);

class ModelRefitTest : public test::DaemonFixture {
 protected:
  // Job 11 on 8 GPUs of a100-1, job 12 on 4 of a100-2, both running since 200.
  ClusterSnapshot two_jobs() const {
    return snapshot({test::running_job(11, "a100-1", kEight, 200), test::running_job(12, "a100-2", kFour, 200)});
  }

  // The iteration times the model in `view` predicts for the jobs' current plans, by id.
  static std::map<std::string, double> predicted_s(const BuiltView& built) {
    policy::PlanOracle oracle(built.apps);
    std::map<std::string, double> out;
    for (const policy::JobState& j : built.view.jobs)
      out[j.id] = oracle.predict_s(j, j.current.plan, built.view.nodes, j.current.slices);
    return out;
  }

  // Both jobs report `factor` times what the model predicts for them.
  JobHistories reporting(double factor) const {
    const std::map<std::string, double> predicted = predicted_s(build_view(two_jobs(), context_));
    JobHistories h;
    test::report(h[11], 11, 300, kEight, factor * predicted.at("11"), 5);
    test::report(h[12], 12, 300, kFour, factor * predicted.at("12"), 5);
    return h;
  }

  // The history of `job` alone.
  static JobHistories only(const JobHistories& histories, std::uint32_t job) {
    return JobHistories{{job, histories.at(job)}};
  }

  // One round of a refitter that has seen nothing before.
  std::vector<ModelRefit> refits(const JobHistories& histories, double threshold) const {
    ModelRefitter refitter(RefitOptions{.error_threshold = threshold});
    return refit_round(refitter, build_view(two_jobs(), context_, histories));
  }
};

TEST_F(ModelRefitTest, AModelThatMispredictsItsJobsIsRefitTowardsTheirMeasurements) {
  const JobHistories slow = reporting(1.5);
  const std::vector<ModelRefit> r = refits(slow, 0.10);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].model, "gpt2-1.5b");
  EXPECT_EQ(r[0].configurations.size(), 2u);
  EXPECT_NEAR(r[0].error_before, 0.5 / 1.5, 1e-9);  // |p - 1.5 p| / 1.5 p
  EXPECT_TRUE(r[0].accepted);
  EXPECT_LT(r[0].error_after, r[0].error_before);  // as far as the prior lets two points move it
  EXPECT_TRUE(std::isfinite(r[0].rmsle) && r[0].rmsle >= 0);
  EXPECT_NE(describe(r[0]).find("refit gpt2-1.5b: error 33.3% -> "), std::string::npos) << describe(r[0]);
  EXPECT_NE(describe(r[0]).find(" on 2 points"), std::string::npos) << describe(r[0]);

  // The view takes the refitted parameters: every prediction moves towards the measurement.
  const BuiltView before = build_view(two_jobs(), context_, slow);
  const std::map<std::string, PerfModel> refitted{{"gpt2-1.5b", r[0].perf}};
  ViewContext with = context_;
  with.refitted = &refitted;
  const BuiltView after = build_view(two_jobs(), with, slow);
  const auto p0 = predicted_s(before), p1 = predicted_s(after);
  for (const char* id : {"11", "12"}) {
    const double measured = after.measured.at(id).iteration_s;
    EXPECT_GT(p1.at(id), p0.at(id)) << id;
    EXPECT_LT(std::abs(p1.at(id) - measured), std::abs(p0.at(id) - measured)) << id;
  }
  // A model of another name keeps PerfStore's parameters.
  const std::map<std::string, PerfModel> other{{"bert-336m", r[0].perf}};
  with.refitted = &other;
  EXPECT_DOUBLE_EQ(predicted_s(build_view(two_jobs(), with, slow)).at("11"), p0.at("11"));
}

TEST_F(ModelRefitTest, NoRefitWithinTheThresholdOrWhenItIsOff) {
  EXPECT_TRUE(refits(reporting(1.05), 0.10).empty());  // 4.8% off
  EXPECT_EQ(refits(reporting(1.05), 0.04).size(), 1u);
  EXPECT_TRUE(refits(reporting(1.5), 0).empty());    // RefitErrorThreshold=0
  EXPECT_TRUE(refits({}, 0.10).empty());             // nothing measured
  JobHistories few;  // two iterations: no measurement, no point
  test::report(few[11], 11, 300, kEight, 10.0, 2);
  EXPECT_TRUE(refits(few, 0.10).empty());
}

// A configuration measured 10x off the model or more is no evidence: a user's own job
// reporting 20x faster than any plan runs would otherwise pull the model of every job of
// that model. The plausible one is refitted alone.
TEST_F(ModelRefitTest, AMeasurementTenTimesOffTheModelIsLeftOut) {
  const std::map<std::string, double> predicted = predicted_s(build_view(two_jobs(), context_));
  JobHistories h;
  test::report(h[11], 11, 300, kEight, 0.05 * predicted.at("11"), 5);
  test::report(h[12], 12, 300, kFour, 1.5 * predicted.at("12"), 5);
  const std::vector<ModelRefit> r = refits(h, 0.10);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].configurations.size(), 1u);
  ASSERT_EQ(r[0].implausible.size(), 1u);
  EXPECT_NE(r[0].implausible.begin()->find(to_string(kEight)), std::string::npos) << *r[0].implausible.begin();
  EXPECT_NEAR(r[0].error_before, 0.5 / 1.5, 1e-9);  // job 12's alone
  EXPECT_NE(describe(r[0]).find("; left out, 10x off the model or more: "), std::string::npos) << describe(r[0]);
  // 10x slow is as implausible; with nothing plausible left there is no refit.
  JobHistories both;
  test::report(both[11], 11, 300, kEight, 12 * predicted.at("11"), 5);
  test::report(both[12], 12, 300, kFour, 0.05 * predicted.at("12"), 5);
  EXPECT_TRUE(refits(both, 0.10).empty());
}

// A NaN iteration time is no point (it broke the median's ordering), and a job of an
// application the view has no model of is named, not "map::at".
TEST_F(ModelRefitTest, ANanMeasurementIsNoPointAndAnUnknownApplicationIsNamed) {
  BuiltView built = build_view(two_jobs(), context_, reporting(1.5));
  built.view.jobs[0].measured_iteration_s = std::nan("");
  ModelRefitter refitter(RefitOptions{.error_threshold = 0.10});
  const std::vector<ModelRefit> r = refit_round(refitter, built);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].configurations.size(), 1u);  // job 12's alone
  for (const auto& point : refitter.learned()) EXPECT_TRUE(std::isfinite(point.iteration_s));
  built.view.jobs[1].app = "no-such-app";
  try {
    refit_round(refitter, built);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "model refit: job 12 is of application 'no-such-app', which the view has no model of");
  }
}

// A job spanning two GPU types (issue 15) runs at its slowest group's pace: its reports
// are no point of the one-type model. Only job 12's configuration is refitted.
TEST_F(ModelRefitTest, AJobSpanningTwoGpuTypesIsNotAPointOfTheRefit) {
  SlurmJob spanning = test::running_job(11, "a100-1", kEight, 200);
  JobRecord r = parse_admin_comment(spanning.admin_comment);
  r.current.gpu_type.clear();
  r.current.nodes = 2;
  r.current.gpus_per_node = 4;
  r.current.plan = test::make_plan(8, 1, 1, 1, 1, 1);
  r.current.plan.zero_stage = 1;
  r.current.groups = {{"a100-80g", 1, 1, 3}, {"v100-32g", 1, 1, 1}};  // 4*3 + 4*1 = 16
  spanning.admin_comment = to_admin_comment(r);
  spanning.nodes = {"a100-1", "v100-1"};
  ClusterSnapshot s = snapshot({spanning, test::running_job(12, "a100-2", kFour, 200)});
  s.nodes[2].gpus_in_use = 4;
  const BuiltView quiet = build_view(s, context_);
  ASSERT_EQ(quiet.view.jobs.size(), 2u);
  const std::map<std::string, double> predicted = predicted_s(quiet);
  JobHistories h;
  test::report(h[11], 11, 300, r.current.plan, 1.5 * predicted.at("12"), 5);
  test::report(h[12], 12, 300, kFour, 1.5 * predicted.at("12"), 5);
  ModelRefitter refitter(RefitOptions{.error_threshold = 0.10});
  const std::vector<ModelRefit> refit = refit_round(refitter, build_view(s, context_, h));
  ASSERT_EQ(refit.size(), 1u);
  EXPECT_EQ(refit[0].configurations.size(), 1u) << describe(refit[0]);
}

// The refit sees the same evidence once: a round whose points the last refit saw does
// not refit again (the model in use being the one before the refit, as when it was not
// kept), one that adds a configuration does. Job 12 alone first, then both jobs.
TEST_F(ModelRefitTest, TheSameEvidenceDoesNotRefitAModelTwice) {
  const JobHistories slow = reporting(1.5);
  const JobHistories only_12 = only(slow, 12);
  ModelRefitter refitter(RefitOptions{.error_threshold = 0.10});
  const BuiltView one = build_view(two_jobs(), context_, only_12);
  const std::vector<ModelRefit> first = refit_round(refitter, one);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].configurations.size(), 1u);
  EXPECT_TRUE(refit_round(refitter, one).empty());
  const std::vector<ModelRefit> second = refit_round(refitter, build_view(two_jobs(), context_, slow));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].configurations.size(), 2u);
}

// What a job measured stays a point after it ends: a refit fits every configuration its
// model's jobs have run, not only those running at the time, which would pull the model
// back and forth as jobs come and go. Job 11 reports, then ends; job 12 reports alone.
TEST_F(ModelRefitTest, AFinishedJobsMeasurementStaysAPoint) {
  const JobHistories slow = reporting(1.5);
  const JobHistories only_11 = only(slow, 11), only_12 = only(slow, 12);
  ModelRefitter refitter(RefitOptions{.error_threshold = 0.10});
  const std::vector<ModelRefit> first = refit_round(refitter, build_view(two_jobs(), context_, only_11));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].configurations.size(), 1u);
  const std::string eleven = *first[0].configurations.begin();

  const ClusterSnapshot twelve_alone = snapshot({test::running_job(12, "a100-2", kFour, 200)});
  const std::vector<ModelRefit> second = refit_round(refitter, build_view(twelve_alone, context_, only_12));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].configurations.size(), 2u);
  EXPECT_EQ(second[0].configurations.count(eleven), 1u) << describe(second[0]);
  // Both points, each 1.5x what the model predicted: the refit predicts them as a fresh
  // refitter does that sees both jobs at once.
  const std::vector<ModelRefit> both = refits(slow, 0.10);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_NEAR(second[0].error_before, both[0].error_before, 1e-9);
  EXPECT_EQ(second[0].perf.params.to_array(), both[0].perf.params.to_array());
}

// What a refitter learned, restored into a new one (a restarted morphd: from its state
// database), refits as the refitter that measured it: job 11 reports and ends; a new
// refitter that restored what the first learned sees job 12 alone and refits both
// configurations, to the first refitter's parameters.
TEST_F(ModelRefitTest, RestoredPointsRefitAsTheRefitterThatLearnedThem) {
  const JobHistories slow = reporting(1.5);
  const JobHistories only_11 = only(slow, 11), only_12 = only(slow, 12);
  ModelRefitter first(RefitOptions{.error_threshold = 0.10});
  const BuiltView eleven = build_view(two_jobs(), context_, only_11);
  refit_round(first, eleven);
  ASSERT_EQ(first.learned().size(), 1u);
  const policy::RefitPoint learned = first.learned()[0];
  EXPECT_EQ(learned.model, "gpt2-1.5b");
  EXPECT_EQ(learned.job, "11");
  EXPECT_EQ(learned.plan, kEight);
  EXPECT_EQ(learned.allocation.gpus(), 8);
  EXPECT_DOUBLE_EQ(learned.iteration_s, eleven.view.jobs[0].measured_iteration_s);
  refit_round(first, eleven);
  EXPECT_TRUE(first.learned().empty()) << "the same measurement again is nothing new";

  const ClusterSnapshot twelve_alone = snapshot({test::running_job(12, "a100-2", kFour, 200)});
  const BuiltView twelve = build_view(twelve_alone, context_, only_12);
  const std::vector<ModelRefit> by_first = refit_round(first, twelve);
  ASSERT_EQ(by_first.size(), 1u);

  ModelRefitter restarted(RefitOptions{.error_threshold = 0.10});
  restarted.restore(learned);
  const auto remembered = restarted.remembered("gpt2-1.5b");
  ASSERT_EQ(remembered.size(), 1u);
  ASSERT_EQ(remembered.begin()->second.size(), 1u);
  EXPECT_EQ(remembered.begin()->second.begin()->second, std::vector<double>{learned.iteration_s});
  const std::vector<ModelRefit> by_restarted = refit_round(restarted, twelve);
  ASSERT_EQ(by_restarted.size(), 1u);
  EXPECT_EQ(by_restarted[0].configurations, by_first[0].configurations);
  EXPECT_EQ(by_restarted[0].perf.params.to_array(), by_first[0].perf.params.to_array());
  // A refitter that forgot job 11 fits job 12 alone, to other parameters.
  ModelRefitter forgetful(RefitOptions{.error_threshold = 0.10});
  const std::vector<ModelRefit> alone = refit_round(forgetful, twelve);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].configurations.size(), 1u);
  EXPECT_NE(alone[0].perf.params.to_array(), by_first[0].perf.params.to_array());

  policy::RefitPoint bad = learned;
  bad.iteration_s = 0;
  EXPECT_THROW(restarted.restore(bad), Error);
  bad = learned;
  bad.model.clear();
  EXPECT_THROW(restarted.restore(bad), Error);
}

// A model saved with its evidence (PerfModelDir) is refitted to it as well: profile runs
// that agree with the model hold it against two jobs that run half as slow again.
TEST_F(ModelRefitTest, TheModelsSavedEvidenceIsFittedAgain) {
  const JobHistories slow = reporting(1.5);
  const std::vector<ModelRefit> bare = refits(slow, 0.10);
  ASSERT_EQ(bare.size(), 1u);

  // The evidence: the jobs' own configurations as the model in use predicts them, three
  // runs each, saved in the model's file.
  const BuiltView built = build_view(two_jobs(), context_);
  auto evidence = std::make_shared<FitEvidence>();
  for (const policy::JobState& j : built.view.jobs) {
    const policy::AppProfile& app = built.apps.at(j.app);
    MeasuredPoint p;
    p.terms = iteration_terms(app.workload, j.current.plan, policy::to_allocation(built.view.nodes, j.current.slices),
                              app.perf.forward);
    p.iter_ms = predict_iteration(p.terms, app.perf.params).iter_ms;
    for (int run = 0; run < 3; ++run) evidence->push_back(p);
  }
  const policy::AppProfile& app = built.apps.begin()->second;
  PerfModel saved{app.perf.forward, app.perf.params};
  saved.evidence = evidence;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("morph-refit-evidence-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "gpt2.json") << perf_model_to_json("gpt2-1.5b", saved);
  perf_ = PerfStore::load_dir(dir.string());
  std::filesystem::remove_all(dir);

  const std::vector<ModelRefit> held = refits(slow, 0.10);
  ASSERT_EQ(held.size(), 1u);
  ASSERT_NE(held[0].perf.evidence, nullptr);
  EXPECT_EQ(held[0].perf.evidence->size(), evidence->size());  // kept, not grown by the points
  EXPECT_NEAR(held[0].error_before, bare[0].error_before, 1e-9);
  // Both still move towards the jobs, the one with evidence less far.
  EXPECT_LT(held[0].error_after, held[0].error_before);
  EXPECT_GT(held[0].error_after, bare[0].error_after + 0.02);

  // The refit keeps the prior it was fitted with for the next one, around the saved
  // parameters and not its own, so that the next refit counts the evidence once; the
  // view takes both.
  ASSERT_TRUE(held[0].accepted);
  EXPECT_EQ(held[0].perf.prior.weight, kDefaultPriorWeight);
  EXPECT_EQ(held[0].perf.prior.centre.to_array(), saved.params.to_array());
  const std::map<std::string, PerfModel> refitted{{"gpt2-1.5b", held[0].perf}};
  ViewContext with = context_;
  with.refitted = &refitted;
  const PerfModel in_use = build_view(two_jobs(), with).apps.begin()->second.perf;
  EXPECT_EQ(in_use.params.to_array(), held[0].perf.params.to_array());
  EXPECT_EQ(in_use.prior.centre.to_array(), saved.params.to_array());
  EXPECT_EQ(in_use.evidence->size(), evidence->size());
}

// A configuration keeps the latest measurement of each of the last
// kJobsPerConfiguration jobs that ran it, so that a long-lived morphd's memory stays
// bounded: 20 jobs of one application, one after the other on 4 GPUs, leave the last 16,
// and a job that reports again replaces its own measurement.
// One application "m" on one node of eight GPUs; job(id, gpus, seconds) runs data-parallel
// on the first `gpus` of them and has measured `seconds` per iteration.
struct OneApplication {
  const Workload workload{ModelSpec{"m", 8, 1024, 16, 512, 1000, frenzy_parameter_count(8, 1024, 1000)}, 64, 512};
  const std::map<std::string, policy::AppProfile> apps{
      {"m", policy::AppProfile{workload, PerfModel{ForwardModel{0, 10, 1}, PerfParams{}}}}};
  policy::ClusterView view = [] {
    policy::ClusterView v;
    v.nodes = policy::nodes_from_spec("1x8xbig", test::test_cluster(), "test");
    return v;
  }();

  policy::JobState job(int id, int gpus, double seconds) const {
    policy::JobState j;
    j.id = std::to_string(id);
    j.app = "m";
    j.workload = workload;
    j.current.plan = test::make_plan(gpus, 1, 1, 1, 1, 64 / gpus);
    j.current.slices = {policy::Slice{0, gpus, 8 * gpus, 0}};
    j.measured_iteration_s = seconds;
    return j;
  }
};

TEST(ModelRefitter, EachConfigurationKeepsTheLatestJobsThatRanIt) {
  OneApplication m;
  ModelRefitter refitter(RefitOptions{.error_threshold = 0.10});
  auto report = [&](int id, double seconds) {
    m.view.jobs = {m.job(id, 4, seconds)};
    refitter.round(m.view, m.apps);
  };
  for (int id = 1; id <= 20; ++id) report(id, id);
  report(20, 25);
  const auto remembered = refitter.remembered("m");
  ASSERT_EQ(remembered.size(), 1u);
  ASSERT_EQ(remembered.at("m").size(), 1u);
  const std::vector<double>& times = remembered.at("m").begin()->second;
  ASSERT_EQ(times.size(), ModelRefitter::kJobsPerConfiguration);
  EXPECT_EQ(times.front(), 5);
  EXPECT_EQ(times[times.size() - 2], 19);
  EXPECT_EQ(times.back(), 25);
  EXPECT_TRUE(refitter.remembered("bert-336m").empty());
}

// RefitPointMaxAgeDays: a measurement no round has seen for max_age_s is forgotten, the
// configuration with it; one a running job keeps reporting stays, however old its first.
TEST(ModelRefitter, MeasurementsOlderThanTheMaximumAgeAreForgotten) {
  OneApplication m;
  ModelRefitter refitter(RefitOptions{.error_threshold = 0.10, .max_age_s = 100});
  auto times = [&] {
    std::vector<double> all;
    const auto remembered = refitter.remembered("m");
    if (remembered.count("m"))
      for (const auto& [key, measured] : remembered.at("m")) all.insert(all.end(), measured.begin(), measured.end());
    std::sort(all.begin(), all.end());
    return all;
  };
  auto round = [&](double now_s, std::vector<policy::JobState> jobs) {
    m.view.now_s = now_s;
    m.view.jobs = std::move(jobs);
    refitter.round(m.view, m.apps);
  };
  round(1000, {m.job(1, 4, 2.0), m.job(2, 2, 3.0)});
  EXPECT_EQ(times(), (std::vector<double>{2.0, 3.0}));
  EXPECT_EQ(refitter.learned().size(), 2u);
  round(1040, {m.job(1, 4, 2.0)});  // job 1 still runs, unchanged: nothing to write
  EXPECT_TRUE(refitter.learned().empty());
  round(1090, {m.job(1, 4, 2.0)});  // job 2 ended; job 1's point is written again before the store expires it
  EXPECT_EQ(times(), (std::vector<double>{2.0, 3.0}));
  ASSERT_EQ(refitter.learned().size(), 1u);
  EXPECT_EQ(refitter.learned()[0].job, "1");
  EXPECT_DOUBLE_EQ(refitter.learned()[0].measured_at_s, 1090);
  round(1150, {});  // job 2's point is 150 s old; job 1's was seen 60 s ago
  EXPECT_EQ(times(), std::vector<double>{2.0});
  EXPECT_EQ(refitter.remembered("m")["m"].size(), 1u);  // job 2's configuration is gone
  round(1191, {});
  EXPECT_TRUE(times().empty());
  // Restored points keep their time: an old one is gone at the next round.
  const policy::RefitPoint old{"m", "m", "3", m.workload, ForwardModel{0, 10, 1}, test::make_plan(8, 1, 1, 1, 1, 8),
                               policy::to_allocation(m.view.nodes, {policy::Slice{0, 8, 64, 0}}), 1.5, 1000};
  refitter.restore(old);
  EXPECT_EQ(times(), std::vector<double>{1.5});
  round(1191, {});
  EXPECT_TRUE(times().empty());
  // Without a maximum age nothing is forgotten.
  ModelRefitter keeper(RefitOptions{.error_threshold = 0.10});
  keeper.restore(old);
  m.view.now_s = 1e9;
  keeper.round(m.view, m.apps);
  EXPECT_EQ(keeper.remembered("m")["m"].size(), 1u);
}

TEST_F(ModelRefitTest, InvalidOptionsAreRefusedNamingTheMember) {
  RefitOptions options;
  std::string error;
  EXPECT_TRUE(options.is_valid(&error));
  options.prior_weight = -1;
  EXPECT_FALSE(options.is_valid(&error));
  EXPECT_NE(error.find("prior_weight"), std::string::npos);
  options.prior_weight = 1;
  options.max_age_s = -1;
  EXPECT_FALSE(options.is_valid(&error));
  EXPECT_NE(error.find("max_age_s"), std::string::npos);
  options.max_age_s = 0;
  options.error_threshold = std::nan("");
  EXPECT_FALSE(options.is_valid(&error));
  EXPECT_NE(error.find("error_threshold"), std::string::npos);
  EXPECT_THROW(ModelRefitter{options}, Error);
}

}  // namespace
}  // namespace morph::daemon
