#include "libmorph/refit/refit.h"

#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

const Workload kWorkload{ModelSpec{"m", 24, 2048, 16, 1024, 0, 1.2e9}, 64, 1024};
const ForwardModel kForward{2, 3, 1};
// The parameters that generate the "measurements", and a saved model that is off.
const PerfParams kTruth{2.3, 3.0, 0.08, 3.5, 2.0, 4.0, 12.0};

PerfParams perturbed() {
  PerfParams p = kTruth;
  p.k_bwd *= 1.4;
  p.k_opt *= 0.5;
  p.k_const_ms *= 2.5;
  p.k_opt_off *= 1.5;
  return p;
}

// DP plans of the global batch 64 with 4 samples per micro-batch, optionally offloaded.
ExecutionPlan dp_plan(int dp, bool offload) {
  ExecutionPlan p;
  p.dp = dp;
  p.ga_steps = 64 / dp / 4;
  p.micro_batch_size = 4;
  p.zero_stage = offload ? 2 : 0;
  p.offload = offload;
  return p;
}

struct Case {
  const char* gpus;
  int dp;
  bool offload;
  int cpus_per_gpu;
};

// Observed: what a job ran and reported. Held out: other plans, never observed.
constexpr Case kObserved[] = {{"2xbig", 2, false, 0}, {"2x2xbig", 4, false, 0}, {"2xbig", 2, true, 4},
                              {"8xbig", 8, false, 0}};
constexpr Case kHeldOut[] = {{"1xbig", 1, false, 0}, {"4xbig", 4, false, 0}, {"2x4xbig", 8, false, 0},
                             {"4xbig", 4, true, 2},  {"4x4xbig", 16, true, 4}};

double true_ms(const Case& c) {
  const Cluster cluster = test::test_cluster();
  const IterationTerms terms = iteration_terms(kWorkload, dp_plan(c.dp, c.offload),
                                               parse_gpus_spec(c.gpus, cluster, "t", c.cpus_per_gpu), kForward);
  return predict_iteration(terms, kTruth).iter_ms;
}

// The observations as morph fit --warm-start reads them, through the CSV reader.
std::vector<ObservedIteration> observations() {
  std::string csv = "plan,gpus,iter_ms,cpus_per_gpu\n";
  for (const Case& c : kObserved)
    csv += fmt::format("{},{},{},{}\n", to_string(dp_plan(c.dp, c.offload)), c.gpus, true_ms(c),
                       c.cpus_per_gpu > 0 ? std::to_string(c.cpus_per_gpu) : "");
  return parse_observed_iterations(csv, "synthetic.csv", test::test_cluster(), kWorkload.global_batch);
}

// Mean relative distance of `params`' predictions from the truth on the held-out plans.
double held_out_error(const PerfParams& params) {
  const Cluster cluster = test::test_cluster();
  double sum = 0;
  for (const Case& c : kHeldOut) {
    const IterationTerms terms = iteration_terms(kWorkload, dp_plan(c.dp, c.offload),
                                                 parse_gpus_spec(c.gpus, cluster, "t", c.cpus_per_gpu), kForward);
    sum += std::abs(predict_iteration(terms, params).iter_ms - true_ms(c)) / true_ms(c);
  }
  return sum / std::size(kHeldOut);
}

// Sum over the parameters of |log(after / before)|: how far a refit moved the model.
double log_distance(const PerfParams& a, const PerfParams& b) {
  const auto x = a.to_array();
  const auto y = b.to_array();
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d += std::abs(std::log((x[i] + 1e-6) / (y[i] + 1e-6)));
  return d;
}

TEST(Refit, MovesAPerturbedModelTowardsTheParametersThatGeneratedTheData) {
  const PerfModel start{kForward, perturbed()};
  const std::vector<ObservedIteration> observed = observations();
  FitOptions options;
  options.prior_weight = kDefaultPriorWeight;
  const Refit r = refit_perf_model(start, kWorkload, observed, options);

  ASSERT_EQ(r.points.size(), observed.size());
  ASSERT_EQ(r.predicted_before_ms.size(), observed.size());
  ASSERT_EQ(r.predicted_after_ms.size(), observed.size());
  EXPECT_EQ(r.points[0].label, "synthetic.csv:2");
  EXPECT_EQ(r.after.forward.per_sample_ms, kForward.per_sample_ms);  // the forward model is kept
  double before = 0, after = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    before += std::abs(r.predicted_before_ms[i] - observed[i].iter_ms) / observed[i].iter_ms;
    after += std::abs(r.predicted_after_ms[i] - observed[i].iter_ms) / observed[i].iter_ms;
  }
  // The prior holds the model back (four points against every parameter's prior), so the
  // errors shrink without vanishing; a weak prior goes further (the next test).
  EXPECT_LT(after, 0.9 * before) << "on the observed points";
  const double held_before = held_out_error(start.params);
  const double held_after = held_out_error(r.after.params);
  EXPECT_GT(held_before, 0.05) << "the perturbation must matter for the test to mean anything";
  EXPECT_LT(held_after, 0.9 * held_before) << "on plans never observed";
}

TEST(Refit, AStrongerPriorKeepsTheModelCloserToTheWarmStart) {
  const PerfModel start{kForward, perturbed()};
  const std::vector<ObservedIteration> observed = observations();
  FitOptions weak, strong;
  weak.prior_weight = 0.1;
  strong.prior_weight = 100;
  const Refit w = refit_perf_model(start, kWorkload, observed, weak);
  const Refit s = refit_perf_model(start, kWorkload, observed, strong);
  EXPECT_LT(log_distance(s.after.params, start.params), log_distance(w.after.params, start.params));
  EXPECT_LT(held_out_error(w.after.params), held_out_error(s.after.params));
  EXPECT_LT(held_out_error(w.after.params), 0.5 * held_out_error(start.params));
}

TEST(Refit, SeveralWorkloadsOfOneModelAreRefitTogether) {
  const PerfModel start{kForward, perturbed()};
  const std::vector<ObservedIteration> observed = observations();
  FitOptions options;
  options.prior_weight = kDefaultPriorWeight;
  const Refit one = refit_perf_model(start, kWorkload, observed, options);
  // The same observations in two groups of the same workload: the same refit.
  const std::vector<WorkloadIterations> split{{kWorkload, kForward, {observed.begin(), observed.begin() + 2}},
                                              {kWorkload, kForward, {observed.begin() + 2, observed.end()}}};
  EXPECT_EQ(refit_perf_model(start, split, options).after.params.to_array(), one.after.params.to_array());
  // Each group's points are predicted under its own workload and forward model.
  Workload longer = kWorkload;
  longer.seq_len = 2048;
  const ForwardModel slower{4, 6, 1};
  const std::vector<WorkloadIterations> mixed{{kWorkload, kForward, {observed[0]}}, {longer, slower, {observed[0]}}};
  const Refit m = refit_perf_model(start, mixed, options);
  ASSERT_EQ(m.predicted_before_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(m.predicted_before_ms[1],
                   predict_iteration(iteration_terms(longer, observed[0].plan, observed[0].allocation, slower),
                                     start.params)
                       .iter_ms);
  EXPECT_GT(m.predicted_before_ms[1], m.predicted_before_ms[0]);
  EXPECT_EQ(m.after.forward.per_sample_ms, kForward.per_sample_ms);  // start's forward model stays
}

// What a model was fitted on: the held-out plans as the truth times them.
std::shared_ptr<const FitEvidence> truth_evidence() {
  const Cluster cluster = test::test_cluster();
  FitEvidence evidence;
  for (const Case& c : kHeldOut) {
    MeasuredPoint p;
    p.terms = iteration_terms(kWorkload, dp_plan(c.dp, c.offload), parse_gpus_spec(c.gpus, cluster, "t", c.cpus_per_gpu),
                              kForward);
    p.iter_ms = true_ms(c);
    evidence.push_back(p);
  }
  return std::make_shared<const FitEvidence>(std::move(evidence));
}

TEST(Refit, TheModelsEvidenceIsFittedAgainBesideTheObservations) {
  PerfModel bare{kForward, perturbed()};
  PerfModel backed = bare;
  backed.evidence = truth_evidence();
  const std::vector<ObservedIteration> observed = observations();
  FitOptions options;
  options.prior_weight = 0.1;  // weak enough that points, not the prior, settle the fit
  const Refit without = refit_perf_model(bare, kWorkload, observed, options);
  const Refit with = refit_perf_model(backed, kWorkload, observed, options);
  // The observations alone leave parameters at the prior that the evidence pins down.
  EXPECT_LT(held_out_error(with.after.params), 0.5 * held_out_error(without.after.params));
  EXPECT_LT(held_out_error(with.after.params), 0.02);
  // Only the observations are reported; the fit saw both, evidence first.
  EXPECT_EQ(with.points.size(), observed.size());
  EXPECT_EQ(with.fit.rel_errors.size(), std::size(kHeldOut) + observed.size());
  EXPECT_EQ(with.after.evidence, backed.evidence);  // kept, not grown by the observations
}

TEST(Refit, EvidenceHoldsTheModelAgainstOneJobThatRunsSlow) {
  // A model fitted on the truth, and one job that runs 40% slower than it (a slow data
  // loader): the refit that keeps its evidence stays nearer the truth on the other plans.
  PerfModel bare{kForward, kTruth};
  PerfModel backed = bare;
  backed.evidence = truth_evidence();
  std::vector<ObservedIteration> slow = observations();
  slow.resize(1);
  slow[0].iter_ms *= 1.4;
  FitOptions options;
  options.prior_weight = 0.1;  // weak enough that points, not the prior, settle the fit
  const double drift_without = held_out_error(refit_perf_model(bare, kWorkload, slow, options).after.params);
  const double drift_with = held_out_error(refit_perf_model(backed, kWorkload, slow, options).after.params);
  EXPECT_GT(drift_without, 0.05) << "the slow job must matter for the test to mean anything";
  EXPECT_LT(drift_with, 0.5 * drift_without);
}

TEST(Refit, ARefitSolvesTheModelsOwnFitAgainWithTheObservationsAdded) {
  // A model fitted with a prior around other parameters (as trace rows are fitted beside
  // a profile): its refit carries that prior, not one around its fitted parameters.
  PerfModel start{kForward, kTruth};
  start.evidence = truth_evidence();
  start.prior = {perturbed(), 0.3};
  const std::vector<ObservedIteration> observed = observations();
  FitOptions options;
  options.prior_weight = 5;  // the model's own prior takes its place
  const Refit r = refit_perf_model(start, kWorkload, observed, options);
  std::vector<MeasuredPoint> all = *start.evidence;
  all.insert(all.end(), r.points.begin(), r.points.end());
  FitOptions own;
  own.prior_weight = 0.3;
  own.prior_centre = perturbed();
  EXPECT_EQ(r.after.params.to_array(), fit_perf_params(all, own, start.params).params.to_array());
  EXPECT_EQ(r.after.prior.weight, 0.3);
  EXPECT_EQ(r.after.prior.centre.to_array(), perturbed().to_array());
}

// A model without a prior refitted as morphd does: to the first reports, then to all of
// them (jobs report every iteration again). The second refit must be the one fit of all
// reports (and the evidence) around the start's parameters; a prior moved to the first
// refit's parameters would count the first reports (and the evidence) twice.
void expect_a_refit_of_a_refit_is_one_refit(const PerfModel& start) {
  std::vector<ObservedIteration> observed = observations();
  observed[0].iter_ms *= 1.3;  // reports the start does not explain, so that priors matter
  FitOptions options;
  options.prior_weight = kDefaultPriorWeight;
  const Refit first = refit_perf_model(start, kWorkload, std::span(observed).first(2), options);
  EXPECT_EQ(first.after.prior.weight, kDefaultPriorWeight);
  EXPECT_EQ(first.after.prior.centre.to_array(), start.params.to_array());
  const Refit second = refit_perf_model(first.after, kWorkload, observed, options);
  const Refit once = refit_perf_model(start, kWorkload, observed, options);
  EXPECT_GT(log_distance(first.after.params, start.params), 0.05) << "the first refit must move the model";
  EXPECT_LT(log_distance(second.after.params, once.after.params), 1e-3);
  EXPECT_EQ(second.after.prior.centre.to_array(), start.params.to_array());
}

TEST(Refit, ARefitOfARefitCountsTheEvidenceOnce) {
  PerfModel start{kForward, perturbed()};  // a profile's fit
  start.evidence = truth_evidence();
  expect_a_refit_of_a_refit_is_one_refit(start);
}

TEST(Refit, ARefitOfARefitWithoutEvidenceCountsTheFirstReportsOnce) {
  expect_a_refit_of_a_refit_is_one_refit(PerfModel{kForward, perturbed()});  // parameters alone
}

TEST(Refit, NothingObservedKeepsTheModel) {
  const PerfModel start{kForward, perturbed()};
  const Refit r = refit_perf_model(start, kWorkload, {}, FitOptions{});
  EXPECT_TRUE(r.points.empty());
  EXPECT_EQ(r.after.params.to_array(), start.params.to_array());
}

TEST(Refit, MeanRelativeError) {
  EXPECT_NEAR(mean_relative_error(std::vector<double>{110, 45}, std::vector<double>{100, 50}), (0.1 + 0.1) / 2, 1e-12);
  EXPECT_EQ(mean_relative_error({}, {}), 0);
  EXPECT_THROW(mean_relative_error(std::vector<double>{1}, std::vector<double>{1, 2}), Error);
  EXPECT_THROW(mean_relative_error(std::vector<double>{1}, std::vector<double>{0}), Error);
}

// The observations of one workload, as morphd groups them.
std::vector<WorkloadIterations> one_group(std::vector<ObservedIteration> observed) {
  return {WorkloadIterations{kWorkload, kForward, std::move(observed)}};
}

TEST(GatedRefit, AModelThatPredictsItsJobsWithinTheThresholdIsNotRefitted) {
  const PerfModel start{kForward, perturbed()};
  const std::vector<WorkloadIterations> groups = one_group(observations());
  FitOptions options;
  options.prior_weight = kDefaultPriorWeight;
  const GatedRefit held = gated_refit(start, groups, 0.99, options);
  EXPECT_GT(held.error_before, 0.02) << "the perturbation must matter for the test to mean anything";
  EXPECT_FALSE(held.tried);
  EXPECT_FALSE(held.accepted);
  EXPECT_EQ(held.error_after, held.error_before);
  EXPECT_EQ(held.model.params.to_array(), start.params.to_array());

  // Just below its error, the refit is tried and, predicting the jobs better, kept: it is
  // refit_perf_model's.
  const GatedRefit kept = gated_refit(start, groups, held.error_before * 0.99, options);
  EXPECT_TRUE(kept.tried);
  EXPECT_TRUE(kept.accepted);
  EXPECT_LT(kept.error_after, kept.error_before);
  EXPECT_EQ(kept.error_before, held.error_before);
  const Refit refit = refit_perf_model(start, groups, options);
  EXPECT_EQ(kept.model.params.to_array(), refit.after.params.to_array());
  EXPECT_EQ(kept.model.prior.weight, kDefaultPriorWeight);
  EXPECT_GT(kept.rmsle, 0);
}

TEST(GatedRefit, ARefitThatPredictsTheJobsWorseIsNotKept) {
  // The model was fitted on five runs of a configuration at 0.8x the truth's time; a job
  // of it now reports 1.05x. The refit, held by that evidence, moves towards 0.8x and
  // away from the report, so the model in use stays.
  const Case& c = kObserved[0];
  PerfModel start{kForward, kTruth};
  MeasuredPoint point;
  point.terms = iteration_terms(kWorkload, dp_plan(c.dp, c.offload),
                                parse_gpus_spec(c.gpus, test::test_cluster(), "t", c.cpus_per_gpu), kForward);
  point.iter_ms = 0.8 * true_ms(c);
  start.evidence = std::make_shared<const FitEvidence>(FitEvidence(5, point));
  std::vector<ObservedIteration> report = observations();
  report.resize(1);
  report[0].iter_ms = 1.05 * true_ms(c);
  FitOptions options;
  options.prior_weight = kDefaultPriorWeight;
  const GatedRefit g = gated_refit(start, one_group(report), 0.01, options);
  EXPECT_TRUE(g.tried);
  EXPECT_FALSE(g.accepted);
  EXPECT_GT(g.error_after, g.error_before);
  EXPECT_EQ(g.model.params.to_array(), start.params.to_array());
  EXPECT_EQ(g.model.prior.weight, 0);  // nothing of the refused refit stays
}

// Three jobs of one application report every configuration 3x slower than the model
// fitted on the truth (an I/O-bound application): outnumbered, the profile's points become
// soft-L1's outliers, and the refit that follows the reports would miss the profile for
// every other job of the model, so it is refused; 15% slower moves it within the tolerance.
TEST(GatedRefit, ARefitThatWouldMissTheModelsProfileIsNotKept) {
  PerfModel start{kForward, kTruth};
  start.evidence = truth_evidence();
  FitOptions options;
  options.prior_weight = kDefaultPriorWeight;
  auto slowed = [](double factor) {
    std::vector<ObservedIteration> slow;
    for (int job = 0; job < 3; ++job)
      for (ObservedIteration o : observations()) {
        o.iter_ms *= factor;
        slow.push_back(o);
      }
    return slow;
  };
  const GatedRefit dragged = gated_refit(start, one_group(slowed(3)), 0.1, options);
  EXPECT_TRUE(dragged.tried);
  EXPECT_LT(dragged.error_after, dragged.error_before) << "the refit would predict the reports better";
  EXPECT_GT(dragged.evidence_error_after, kEvidenceTolerance);
  EXPECT_NEAR(dragged.evidence_error_before, 0, 1e-9);
  EXPECT_FALSE(dragged.accepted);
  EXPECT_EQ(dragged.model.params.to_array(), start.params.to_array());
  const GatedRefit nudged = gated_refit(start, one_group(slowed(1.15)), 0.1, options);
  EXPECT_TRUE(nudged.tried);
  EXPECT_LE(nudged.evidence_error_after, kEvidenceTolerance);
  EXPECT_TRUE(nudged.accepted);
}

TEST(Refit, RefusesANegativePriorWeight) {
  FitOptions options;
  options.prior_weight = -1;
  EXPECT_THROW(refit_perf_model(PerfModel{kForward, kTruth}, kWorkload, observations(), options), Error);
}

}  // namespace
}  // namespace morph
