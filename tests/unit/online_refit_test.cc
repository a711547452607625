#include "libmorph/artifact/online_refit.h"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

TEST(OnlineRefit, OptionsValidateThemselves) {
  std::string error;
  EXPECT_TRUE(OnlineRefitOptions{}.is_valid(&error)) << error;
  OnlineRefitOptions o;
  o.prior_weight = -0.5;
  EXPECT_FALSE(o.is_valid(&error));
  EXPECT_NE(error.find("prior weight"), std::string::npos) << error;
  o = OnlineRefitOptions{};
  o.refit_threshold = -0.1;
  EXPECT_FALSE(o.is_valid(&error));
  EXPECT_NE(error.find("refit threshold"), std::string::npos) << error;
  o = OnlineRefitOptions{};
  o.min_rows = o.observed_rows;
  EXPECT_FALSE(o.is_valid(&error));
  EXPECT_NE(error.find("held out"), std::string::npos) << error;
}

// Per model, the families' errors weighed by their held-out rows: vit (10 rows at 20% -> 8%,
// halved; 30 rows at 10% -> 6%) gives 12.5% -> 6.5% over 40 rows; bert's one family stays.
TEST(OnlineRefit, PerModelTheFamiliesWeighByTheirHeldOutRows) {
  const auto curve = [](std::string workload, int held_out, std::vector<double> avg_error) {
    OnlineRefitCurve c;
    c.workload = std::move(workload);
    c.held_out = held_out;
    c.avg_error = std::move(avg_error);
    return c;
  };
  const std::vector<OnlineRefitCurve> curves{curve("vit", 10, {0.20, 0.12, 0.08}), curve("vit", 30, {0.10, 0.07, 0.06}),
                                             curve("bert", 5, {0.04, 0.05})};
  const std::vector<OnlineRefitModel> models = online_refit_by_model(curves);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].workload, "vit");
  EXPECT_EQ(models[0].families, 2);
  EXPECT_EQ(models[0].halved, 1);
  EXPECT_EQ(models[0].held_out, 40);
  EXPECT_NEAR(models[0].avg_error_before, 0.125, 1e-12);
  EXPECT_NEAR(models[0].avg_error_after, 0.065, 1e-12);
  EXPECT_EQ(models[1].workload, "bert");
  EXPECT_EQ(models[1].halved, 0);
  EXPECT_NEAR(models[1].avg_error_after, 0.05, 1e-12);
  EXPECT_TRUE(online_refit_by_model({}).empty());
}

TEST(OnlineRefit, LevelCorrectedErrorIsTheBestSingleFactor) {
  // c = 1: 0, 1/2, 3/4 -> 5/12; c = 2: 1, 0, 1/2 -> 1/2; c = 4: 3, 1, 0 -> 4/3
  const std::vector<double> p{1, 1, 1}, m{1, 2, 4};
  EXPECT_NEAR(level_corrected_error(p, m), 5.0 / 12, 1e-12);
  // predictions off by one factor: the floor is 0
  EXPECT_NEAR(level_corrected_error(std::vector<double>{2, 4, 6}, std::vector<double>{1, 2, 3}), 0, 1e-12);
  EXPECT_THROW(level_corrected_error(std::vector<double>{1}, std::vector<double>{1, 2}), Error);
  EXPECT_THROW(level_corrected_error(std::vector<double>{0}, std::vector<double>{1}), Error);
}

// The artifact's bert workload fitted as morph validate fits it (K = 3).
WorkloadValidation bert_validation(const std::string& dir) {
  const MorphConfig config = load_morph_conf(test::source_dir() + "/etc/morph.conf");
  const Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  const ArtifactSpec spec = load_artifact_spec(test::source_dir() + "/share/morphling-artifact.json");
  ValidationOptions validation;
  validation.extra_rows = 3;
  return fit_workload(dir + "/profile/bert", {dir + "/traces/bert/placements.csv"}, *spec.find("bert"), spec, catalog,
                      config, validation);
}

// On the artifact's bert workload: the curve starts at the fitted model's own errors on the
// held-out rows, and every family with enough unseen rows has a curve.
TEST(OnlineRefit, BertCurvesStartAtTheFittedModelAndHoldOutTheRest) {
  MORPH_REQUIRE_ARTIFACT(dir);
  const WorkloadValidation v = bert_validation(dir);
  const OnlineRefitOptions options;
  const std::vector<OnlineRefitCurve> curves = online_refit_curves(v, options);

  std::map<std::string, std::vector<const ValidatedRow*>> unseen;
  for (const ValidatedRow& r : v.rows)
    if (r.row.iter_ms > 0 && !r.used_for_fit && !r.profiled) unseen[r.family].push_back(&r);
  std::size_t expected = 0;
  for (const auto& [family, rows] : unseen) expected += rows.size() >= static_cast<std::size_t>(options.min_rows);
  ASSERT_EQ(curves.size(), expected);
  ASSERT_FALSE(curves.empty());
  for (const OnlineRefitCurve& c : curves) {
    const auto& rows = unseen.at(c.family);
    EXPECT_EQ(c.workload, "bert");
    EXPECT_EQ(c.held_out + options.observed_rows, static_cast<int>(rows.size())) << c.family;
    ASSERT_EQ(c.avg_error.size(), static_cast<std::size_t>(options.observed_rows + 1));
    ASSERT_EQ(c.observed.size(), static_cast<std::size_t>(options.observed_rows));
    EXPECT_EQ(c.observed.front(), rows.front()->row.exec_plan + "," + rows.front()->row.placement);
    // n = 0 is the fitted model: its errors are validate's errors on the held-out rows.
    double sum = 0, max = 0;
    for (std::size_t i = static_cast<std::size_t>(options.observed_rows); i < rows.size(); ++i) {
      sum += rows[i]->error;
      max = std::max(max, rows[i]->error);
    }
    EXPECT_NEAR(c.avg_error.front(), sum / c.held_out, 1e-9) << c.family;
    EXPECT_NEAR(c.max_error.front(), max, 1e-9) << c.family;
    EXPECT_LE(c.level_floor, c.avg_error.front() + 1e-12) << c.family;  // c = 1 is a candidate
    EXPECT_GE(c.level_floor, 0);
    // Fitted to the held-out rows themselves, the model does at least as well on them as
    // the level correction of the fit that never saw them (up to the loss's difference).
    EXPECT_LE(c.fit_floor, c.level_floor + 0.01) << c.family;
    EXPECT_GE(c.fit_floor, 0);
    for (std::size_t n = 0; n < c.avg_error.size(); ++n) {
      EXPECT_TRUE(std::isfinite(c.avg_error[n]));
      EXPECT_LE(c.avg_error[n], c.max_error[n] + 1e-12);
    }
  }
  // The fit floor is the model's form on the held-out rows alone: no prior, whatever the
  // fitted model's was; the refits keep theirs.
  WorkloadValidation strong = v;
  strong.prior.weight = 30;
  const std::vector<OnlineRefitCurve> held = online_refit_curves(strong, options);
  ASSERT_EQ(held.size(), curves.size());
  bool refits_differ = false;
  for (std::size_t i = 0; i < curves.size(); ++i) {
    EXPECT_EQ(held[i].fit_floor, curves[i].fit_floor) << curves[i].family;
    refits_differ |= held[i].avg_error.back() != curves[i].avg_error.back();
  }
  EXPECT_TRUE(refits_differ) << "the prior must reach the refits for the check to mean anything";
}

// morphd's threshold: a model that predicts the rows observed so far within it is not
// refitted, so above every error the curves stay at the fitted model; at 0 they move.
TEST(OnlineRefit, NoRefitWhereTheObservedRowsArePredictedWithinTheThreshold) {
  MORPH_REQUIRE_ARTIFACT(dir);
  const WorkloadValidation v = bert_validation(dir);
  OnlineRefitOptions options;
  options.refit_threshold = 10;
  bool moved = false;
  for (const OnlineRefitCurve& c : online_refit_curves(v, options))
    for (double e : c.avg_error) EXPECT_EQ(e, c.avg_error.front()) << c.family;
  options.refit_threshold = 0;
  for (const OnlineRefitCurve& c : online_refit_curves(v, options)) moved |= c.avg_error.back() != c.avg_error.front();
  EXPECT_TRUE(moved) << "without a threshold some refit must be kept for the check to mean anything";
}

// A random order observes other rows of the same family and holds out the rest: the same
// rows in all, the same seed the same order, the held-out error at n = 0 that of the rows
// it holds out.
TEST(OnlineRefit, ARandomOrderObservesOtherRowsOfTheSameFamily) {
  MORPH_REQUIRE_ARTIFACT(dir);
  const WorkloadValidation v = bert_validation(dir);
  OnlineRefitOptions options;
  options.refit_threshold = 10;  // no refit: only the order matters
  const std::vector<OnlineRefitCurve> trace = online_refit_curves(v, options);
  options.order_seed = 7;
  const std::vector<OnlineRefitCurve> shuffled = online_refit_curves(v, options);
  const std::vector<OnlineRefitCurve> again = online_refit_curves(v, options);
  std::map<std::string, std::map<std::string, double>> unseen;  // family -> row -> error
  for (const ValidatedRow& r : v.rows)
    if (r.row.iter_ms > 0 && !r.used_for_fit && !r.profiled)
      unseen[r.family][r.row.exec_plan + "," + r.row.placement] = r.error;
  ASSERT_EQ(shuffled.size(), trace.size());
  bool other_rows = false;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const OnlineRefitCurve& c = shuffled[i];
    EXPECT_EQ(c.family, trace[i].family);
    EXPECT_EQ(c.held_out, trace[i].held_out);
    EXPECT_EQ(c.observed, again[i].observed) << c.family;
    other_rows |= c.observed != trace[i].observed;
    // The held-out rows are the family's others: their mean error is the rest of the sum.
    const auto& rows = unseen.at(c.family);
    double sum = 0;
    for (const auto& [name, error] : rows) sum += error;
    for (const std::string& name : c.observed) {
      ASSERT_TRUE(rows.count(name)) << name;
      sum -= rows.at(name);
    }
    EXPECT_NEAR(c.avg_error.front(), sum / c.held_out, 1e-9) << c.family;
  }
  EXPECT_TRUE(other_rows) << "seed 7 observes the trace's first rows in every family";
}

}  // namespace
}  // namespace morph
