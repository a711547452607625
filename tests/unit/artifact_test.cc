#include "libmorph/artifact/validation.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

ArtifactWorkload workload(PipelineSchedule schedule, int micro_batch) {
  ArtifactWorkload w;
  w.name = "w";
  w.global_batch = w.profile_global_batch = 64;
  w.micro_batch = micro_batch;
  w.seq_len = 1024;
  w.pipeline = schedule;
  return w;
}

TEST(ArtifactPlan, ThreeDigitCodesArePipelineTensorData) {
  const ExecutionPlan p = artifact_plan("248", 64, 64, workload(PipelineSchedule::one_f_one_b, 1), "t");
  EXPECT_EQ(p.pp, 2);
  EXPECT_EQ(p.tp, 4);
  EXPECT_EQ(p.dp, 8);
  EXPECT_EQ(p.micro_batches, 8);  // 64/8 samples per replica, micro-batch 1, pipelined
  EXPECT_EQ(p.ga_steps, 1);
  const ExecutionPlan acc = artifact_plan("248", 64, 64, workload(PipelineSchedule::accumulate, 1), "t");
  EXPECT_EQ(acc.micro_batches, 1);
  EXPECT_EQ(acc.ga_steps, 8);
  EXPECT_THROW(artifact_plan("248", 32, 64, workload(PipelineSchedule::one_f_one_b, 1), "t"), Error);
}

TEST(ArtifactPlan, ExecPlanNotationRoundTrips) {
  const ArtifactWorkload w = workload(PipelineSchedule::one_f_one_b, 1);
  for (const char* code : {"ga", "zero-dp", "zero-offload", "zero-offload+gc", "214", "p2t1d16", "p1t2d32"}) {
    const int gpus = std::string(code) == "p2t1d16" ? 32 : std::string(code) == "p1t2d32" ? 64 : 8;
    EXPECT_EQ(artifact_exec_plan(artifact_plan(code, gpus, 64, w, "t")), code);
  }
  EXPECT_EQ(artifact_plan("p2t1d16", 32, 64, w, "t").pp, 2);
  EXPECT_THROW(artifact_plan("p2t1d16", 16, 64, w, "t"), Error);
  // Sizes whose product overflows an int are refused by name, not wrapped to the GPUs
  // (p1073741825t4d1 once read as 4 GPUs and crashed the fit).
  try {
    artifact_plan("p1073741825t4d1", 4, 64, w, "f.csv:3");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f.csv:3: exec_plan p1073741825t4d1: PP"), std::string::npos) << e.what();
  }
  EXPECT_THROW(artifact_plan("pxt4d1", 4, 64, w, "t"), Error);
}

// morph-profile job's profiles: exec_plan and node_type columns, iteration times only.
TEST(ArtifactProfile, MorphProfilesNameTheirPlansAndLeaveThePartsOut) {
  const std::string dir = ::testing::TempDir() + "/morph-profile-tiny";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.csv")
      << "nodes,gpus,parameter_size,batch_size,seq_hid,num_cpu_threads,zero_type,is_tp,is_pp,exec_plan,node_type\n"
         "1,8,0.013306,32,1,16,1,0,0,zero-offload,dgx-a100\n1,4,0.013306,32,1,16,1,0,0,zero-offload,dgx-a100\n"
         "1,2,0.013306,32,1,16,1,0,0,zero-offload,dgx-a100\n1,8,0.013306,32,1,16,0,0,0,ga,dgx-a100\n"
         "1,4,0.013306,32,1,16,0,0,0,ga,dgx-a100\n1,8,0.013306,32,1,16,0,1,0,142,dgx-a100\n"
         "1,8,0.013306,32,1,16,0,0,1,214,dgx-a100\n";
  std::ofstream(dir + "/data.csv") << "iter_time\n90\n120\n200\n60\n80\n110\n95\n";
  const MorphConfig config = load_morph_conf(test::source_dir() + "/etc/morph.conf");
  const Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  ArtifactWorkload w = workload(PipelineSchedule::one_f_one_b, 1);
  w.model = "layers=4,hidden=16,heads=4,seq=8,vocab=52,name=tiny";
  w.global_batch = w.profile_global_batch = 32;
  w.seq_len = 8;
  ArtifactSpec spec;
  spec.node_type = "hgx-a800";  // overridden by the node_type column
  const std::vector<ArtifactRow> rows = read_profile(dir, w, spec, config.cluster);
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[5].plan.tp, 4);
  EXPECT_EQ(rows[6].plan.pp, 2);
  EXPECT_EQ(rows[0].node_type, "dgx-a100");
  EXPECT_EQ(rows[0].forward_ms, 0);
  const WorkloadValidation v = fit_workload(dir, {}, w, spec, catalog, config, ValidationOptions{});
  EXPECT_TRUE(v.fitted);
  ASSERT_EQ(v.fit.rel_errors.size(), 7u);
  ASSERT_FALSE(v.notes.empty());
  EXPECT_NE(v.notes.front().find("no forward times"), std::string::npos);
}

// Rows of morph-profile job on nodes of 16 GPUs, or on more than 64 nodes: one digit per
// node cannot name them (a 16 became '@' and the fit refused the profile it had measured).
TEST(ArtifactProfile, ProfilesOfWideNodesAndManyNodesAreRead) {
  const std::string dir = ::testing::TempDir() + "/morph-profile-wide";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.csv")
      << "nodes,gpus,parameter_size,batch_size,seq_hid,num_cpu_threads,zero_type,is_tp,is_pp,exec_plan,node_type\n"
         "1,16,0.013306,32,1,4,0,0,0,ga,x16\n2,32,0.013306,32,1,4,0,0,0,ga,x16\n80,640,0.013306,32,1,4,0,0,0,ga,x16\n"
         "3,6,0.013306,32,1,4,0,0,0,ga,x16\n";
  std::ofstream(dir + "/data.csv") << "iter_time\n90\n120\n200\n60\n";
  const MorphConfig config = parse_morph_conf(
      "GpuType=a100-80g MemoryGiB=80 Speed=1.0 PeakTflops=312 Link=nvlink LinkBandwidthGBps=230 PcieBandwidthGBps=24\n"
      "NodeType=x16 Gpu=a100-80g Gpus=16 Cpus=128 MemoryGiB=2048 NetworkBandwidthGBps=100 Nics=8\n",
      "wide.conf");
  ArtifactWorkload w = workload(PipelineSchedule::one_f_one_b, 1);
  w.model = "layers=4,hidden=16,heads=4,seq=8,vocab=52,name=tiny";
  w.global_batch = w.profile_global_batch = 640;
  w.seq_len = 8;
  const std::vector<ArtifactRow> rows = read_profile(dir, w, ArtifactSpec{}, config.cluster);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].placement, "1x16");
  EXPECT_EQ(rows[1].allocation.nodes.size(), 2u);
  EXPECT_EQ(rows[1].allocation.nodes[1].gpus, 16);
  EXPECT_EQ(rows[2].allocation.gpus(), 640);
  EXPECT_EQ(rows[2].placement, "80x8");
  EXPECT_EQ(rows[3].placement, "222");  // the traces' digits where they fit
  EXPECT_EQ(rows[3].allocation.cpus(), 6 * 4);
}

TEST(ArtifactPlan, FamiliesAndCombinations) {
  const ArtifactWorkload w = workload(PipelineSchedule::one_f_one_b, 8);
  const ExecutionPlan ga = artifact_plan("ga", 2, 64, w, "t");
  EXPECT_EQ(ga.dp, 2);
  EXPECT_EQ(ga.ga_steps, 4);
  EXPECT_EQ(ga.micro_batch_size, 8);
  EXPECT_EQ(plan_family(ga), "DP");
  const ExecutionPlan og = artifact_plan("zero-offload+gc", 4, 64, w, "t");
  EXPECT_TRUE(og.offload && og.checkpointing);
  EXPECT_EQ(og.zero_stage, 2);
  EXPECT_EQ(plan_family(og), "ZeRO-Offload+GC");
  EXPECT_EQ(plan_family(artifact_plan("zero-dp", 4, 64, w, "t")), "ZeRO-DP+GA");
  EXPECT_EQ(plan_family(artifact_plan("141", 4, 64, w, "t")), "TP+PP");
  EXPECT_EQ(plan_family(artifact_plan("122", 4, 64, w, "t")), "DP+TP+PP");
  EXPECT_THROW(artifact_plan("zero-turbo", 4, 64, w, "t"), Error);
  // Indivisible batches stay representable; plan_violation reports them.
  EXPECT_EQ(artifact_plan("ga", 48, 64, w, "t").global_batch(), 48);
}

ValidatedRow row(double iter_ms, bool profiled = false, bool in_scope = true) {
  ValidatedRow r;
  r.row.iter_ms = iter_ms;
  r.profiled = profiled;
  r.in_scope = in_scope;
  return r;
}

IterationTerms dp_terms(const char* spec) {
  const Workload w{ModelSpec{"m", 2, 1000, 10, 100, 0, 1e8}, 8, 100};
  return iteration_terms(w, test::make_plan(4, 1, 1, 2, 1, 1), parse_gpus_spec(spec, test::test_cluster(), "--gpus"),
                         ForwardModel{0, 10, 1});
}

TEST(ExtraRows, OnlyMeasuredUnprofiledRowsInScopeThatMorphWouldRunAreCandidates) {
  // Rows 0-3 across nodes (what a one-node profile knows least) but not candidates: did not
  // run, profiled, out of scope, a plan Morph would not run. Rows 4 (one node) and 5
  // (across nodes) are.
  std::vector<ValidatedRow> rows{row(0), row(50, true), row(50, false, false), row(50), row(50), row(50)};
  rows[3].violation = "out of memory";
  const std::vector<IterationTerms> terms{dp_terms("2x2xbig"), dp_terms("2x2xbig"), dp_terms("2x2xbig"),
                                          dp_terms("2x2xbig"), dp_terms("4xbig"), dp_terms("2x2xbig")};
  std::vector<MeasuredPoint> profile(1);
  profile[0].terms = dp_terms("4xbig");
  const PerfParams at{2, 1, 0.1, 2, 1, 1, 5};
  const std::vector<std::size_t> one = select_extra_rows(rows, terms, profile, at, 0.3, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], 5u);
  const std::vector<std::size_t> all = select_extra_rows(rows, terms, profile, at, 0.3, 6);
  EXPECT_EQ(all, (std::vector<std::size_t>{5, 4}));
}

TEST(ExtraRows, RandomDrawsTakeDistinctCandidatesReproduciblyAndDifferBySeed) {
  // Candidates: rows 4-11; rows 0-3 did not run, were profiled, are out of scope, would not run.
  std::vector<ValidatedRow> rows{row(0), row(50, true), row(50, false, false), row(50)};
  rows[3].violation = "out of memory";
  for (int i = 0; i < 8; ++i) rows.push_back(row(50));
  std::set<std::vector<std::size_t>> draws;
  std::set<std::size_t> seen;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const std::vector<std::size_t> d = random_extra_rows(rows, seed, 3);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(std::set<std::size_t>(d.begin(), d.end()).size(), 3u) << "seed " << seed;
    for (std::size_t i : d) {
      EXPECT_GE(i, 4u) << "seed " << seed << " drew a row that is not a candidate";
      seen.insert(i);
    }
    EXPECT_EQ(d, random_extra_rows(rows, seed, 3)) << "seed " << seed << " is not reproducible";
    draws.insert(d);
  }
  EXPECT_EQ(seen.size(), 8u);   // every candidate comes up in 40 draws
  EXPECT_GT(draws.size(), 20u); // and the seeds give different draws
  EXPECT_EQ(random_extra_rows(rows, 7, 20).size(), 8u);  // at most the candidates
  EXPECT_TRUE(random_extra_rows(rows, 7, 0).empty());
}

TEST(PaperScope, ModelsUnderOneBillionParametersOnOneNodeOnly) {
  const MorphConfig config = load_morph_conf(test::source_dir() + "/etc/morph.conf");
  const Allocation one = parse_gpus_spec("8xa800", config.cluster, "test");
  const Allocation two = parse_gpus_spec("2x4xa800", config.cluster, "test");
  ModelSpec small;
  small.params = 0.999e9;
  ModelSpec large;
  large.params = 1e9;
  EXPECT_TRUE(in_paper_scope(small, one));
  EXPECT_FALSE(in_paper_scope(small, two));
  EXPECT_TRUE(in_paper_scope(large, one));
  EXPECT_TRUE(in_paper_scope(large, two));
}

// The project's configuration, catalog and description of the artifact's runs.
struct ProjectFiles {
  MorphConfig config = load_morph_conf(test::source_dir() + "/etc/morph.conf");
  Catalog catalog = Catalog::load_file(test::source_dir() + "/share/models.json");
  ArtifactSpec spec = load_artifact_spec(test::source_dir() + "/share/morphling-artifact.json");
};

TEST(ArtifactData, TraceFeasibilityMatchesTheMemoryModel) {
  MORPH_REQUIRE_ARTIFACT(dir);
  const ProjectFiles f;
  const ArtifactWorkload& w = *f.spec.find("llama7b-bsz16");
  const WorkloadValidation v = fit_workload(dir + "/profile/" + w.profile, {dir + "/traces/llama7b_bsz16/placements.csv"},
                                            w, f.spec, f.catalog, f.config, ValidationOptions{});
  ASSERT_EQ(v.rows.size(), 21u);
  int failed = 0;
  for (const ValidatedRow& r : v.rows) {
    // iter_time 0 marks a run that failed; Morph must refuse exactly those.
    EXPECT_EQ(r.row.iter_ms <= 0, !r.violation.empty()) << r.row.source << " " << r.violation;
    failed += r.row.iter_ms <= 0;
  }
  EXPECT_EQ(failed, 4);
}

// Issue 11's in-sample criterion: each profile's own fit reproduces every profiled point
// within 5% (docs/validation.md, "Why the fit missed its own points").
TEST(ArtifactData, EveryProfileIsReproducedByItsOwnFitWithinFivePercent) {
  MORPH_REQUIRE_ARTIFACT(dir);
  const ProjectFiles f;
  ValidationOptions options;
  options.extra_rows = 0;
  int profiles = 0;
  for (const ArtifactWorkload& w : f.spec.workloads) {
    const WorkloadValidation v =
        fit_workload(dir + "/profile/" + w.profile, {}, w, f.spec, f.catalog, f.config, options);
    if (!v.fitted) continue;  // llama30b: a profile of another model, not fitted on
    ++profiles;
    ASSERT_EQ(v.fit.rel_errors.size(), v.points.size()) << w.name;
    for (std::size_t i = 0; i < v.points.size(); ++i)
      EXPECT_LT(std::abs(v.fit.rel_errors[i]), 0.05) << w.name << " " << v.points[i].label;
  }
  EXPECT_GE(profiles, 6);
}

TEST(ArtifactData, ValidationCoversEveryWorkloadAndStaysNearItsRecord) {
  MORPH_REQUIRE_ARTIFACT(dir);
  const ProjectFiles f;
  ValidationOptions options;
  options.extra_rows = 3;
  const ValidationReport r = validate_artifact(dir, f.spec, f.catalog, f.config, options);
  EXPECT_EQ(r.workloads.size(), f.spec.workloads.size());
  EXPECT_GT(r.points, 450);
  // Issue 11's target for the average (docs/validation.md: 9.18% at K=3): a change that
  // makes the model worse on the artifact fails here.
  EXPECT_LE(r.avg, 0.10);
  // ViT's odd placements stall by 200-350 ms over even ones, more as the fullest node
  // holds more GPUs (docs/models.md, "Odd placements"); its three rows hold both kinds,
  // so the fit finds the stall: k_odd is the stall at two GPUs on the fullest node.
  // The prior of these fits is centred on the profile's own fit: LLaMA-2-7B's one
  // ZeRO-Offload row keeps the profile's k_opt_off (54% off around the defaults).
  for (const WorkloadValidation& v : r.workloads)
    for (const ValidatedRow& row : v.rows)
      if (v.workload.name == "llama7b" && row.scored && row.row.plan.offload) {
        EXPECT_LT(row.error, 0.05) << row.row.exec_plan << "," << row.row.placement;
      }
  for (const WorkloadValidation& v : r.workloads)
    if (v.workload.name == "vit") {
      EXPECT_TRUE(v.fit.fitted[param::kOdd]);
      EXPECT_GT(v.fit.params.k_odd_ms, 150);
      EXPECT_LT(v.fit.params.k_odd_ms, 450);
      // One GPU on each of 4 and 8 nodes stalls by k_odd (n-2)/n (docs/validation.md,
      // "One GPU on every node"): these six rows were 43-80% under without it.
      int ones = 0;
      for (const ValidatedRow& row : v.rows)
        if (row.scored && row.row.placement.find_first_not_of('1') == std::string::npos &&
            row.row.placement.size() >= 4 && !row.row.plan.offload) {
          ++ones;
          EXPECT_LT(row.error, 0.40) << row.row.exec_plan << "," << row.row.placement;
        }
      EXPECT_EQ(ones, 6);
    }
  // Rows used for fitting or profiled are never scored.
  for (const WorkloadValidation& v : r.workloads) {
    int fitted = 0;
    for (const ValidatedRow& row : v.rows) fitted += row.used_for_fit;
    EXPECT_LE(fitted, 3) << v.workload.name;
  }
  EXPECT_GE(r.feasibility_agree, r.feasibility_rows - 4);
  EXPECT_THROW(validate_artifact(test::source_dir(), f.spec, f.catalog, f.config, options), Error);
}

TEST(ArtifactData, PaperScopeFitsAndScoresOnlyTable2sConfigurations) {
  MORPH_REQUIRE_ARTIFACT(dir);
  const ProjectFiles f;
  ValidationOptions options;
  options.extra_rows = 3;
  const int all = validate_artifact(dir, f.spec, f.catalog, f.config, options).points;
  options.paper_scope = true;
  const ValidationReport r = validate_artifact(dir, f.spec, f.catalog, f.config, options);
  EXPECT_GT(r.points, 200);
  EXPECT_LT(r.points, all);
  int scored = 0, cross_node_small = 0, large = 0;
  for (const WorkloadValidation& v : r.workloads)
    for (const ValidatedRow& row : v.rows) {
      EXPECT_EQ(row.in_scope, in_paper_scope(v.model, row.row.allocation)) << row.row.source;
      if (!row.in_scope) {
        EXPECT_FALSE(row.used_for_fit || row.scored) << row.row.source;
      }
      scored += row.scored;
      large += row.scored && v.model.params >= 1e9;
      cross_node_small += !row.in_scope && row.row.iter_ms > 0;
    }
  EXPECT_EQ(scored, r.points);
  EXPECT_GT(large, 0);             // T5, GPT-2, LLaMA: every placement
  EXPECT_GT(cross_node_small, 0);  // ViT, RoBERTa, BERT across nodes: left out
}

}  // namespace
}  // namespace morph
