#include "libmorph/config/morph_conf.h"

#include <csignal>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "libmorph/util/error.h"
#include "test_support.h"

namespace morph {
namespace {

const char* kGpu = "GpuType=g MemoryGiB=80 Speed=1 PeakTflops=312 Link=nvlink LinkBandwidthGBps=150 PcieBandwidthGBps=20\n";
const char* kNode = "NodeType=n Gpu=g Gpus=8 Cpus=96 MemoryGiB=1600 NetworkBandwidthGBps=50 Nics=4\n";

std::string error_of(const std::string& text) {
  try {
    parse_morph_conf(text, "morph.conf");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MorphConf, ParsesRecordsNodesAndKnobs) {
  const MorphConfig c = parse_morph_conf(std::string("# comment\n") + kGpu + kNode +
                                             "NodeName=node[01-04] NodeType=n  # four\n"
                                             "restartpenaltyseconds=100\nDefaultSla=guaranteed\nGpuOverheadMiB=1024\n",
                                         "morph.conf");
  ASSERT_NE(c.cluster.find_gpu_type("G"), nullptr);
  EXPECT_DOUBLE_EQ(c.cluster.find_gpu_type("g")->link_bandwidth_Bps, 150e9);
  const NodeType* n = c.cluster.find_node_type("n");
  ASSERT_NE(n, nullptr);
  EXPECT_DOUBLE_EQ(n->host_bandwidth_Bps, 8 * 20e9);  // default: Gpus x PCIe
  EXPECT_EQ(c.cluster.nodes().size(), 4u);
  EXPECT_EQ(c.cluster.nodes()[3].name, "node04");
  EXPECT_DOUBLE_EQ(c.policy.restart_penalty_s, 100);
  EXPECT_EQ(c.policy.restart_costs, policy::RestartCosts::uniform(100));
  EXPECT_TRUE(c.policy.guaranteed_by_default);
  EXPECT_DOUBLE_EQ(c.memory.gpu_overhead_bytes, 1024.0 * 1024 * 1024);
}

// Each path's cost is RestartPenaltySeconds unless its own key says otherwise, before or
// after that line.
TEST(MorphConf, RestartCostsPerPath) {
  const MorphConfig c = parse_morph_conf("ShrinkPenaltySeconds=2\nRestartPenaltySeconds=30\nRequeuePenaltySeconds=14\n",
                                         "morph.conf");
  EXPECT_EQ(c.policy.restart_costs, (policy::RestartCosts{30, 30, 2, 14}));
  EXPECT_EQ(parse_morph_conf("", "morph.conf").policy.restart_costs, policy::RestartCosts::uniform(260));
  EXPECT_NE(error_of("InPlacePenaltySeconds=-1\n").find("InPlacePenaltySeconds"), std::string::npos);
}

TEST(MorphConf, CheckpointSignalIsNeverSigusr1) {
  EXPECT_EQ(parse_morph_conf("", "morph.conf").checkpoint_signal, SIGUSR2);
  EXPECT_EQ(parse_morph_conf("CheckpointSignal=term\n", "morph.conf").checkpoint_signal, SIGTERM);
  EXPECT_NE(error_of("CheckpointSignal=SIGUSR1\n").find("NCCL"), std::string::npos);
  EXPECT_NE(error_of("CheckpointSignal=SIGKILL\n").find("not one of"), std::string::npos);
}

TEST(MorphConf, PluginKnobs) {
  const MorphConfig c = parse_morph_conf("MaxGpusPerJob=32\nModelCatalog=/x/models.json\nPerfModelDir=/x/perf\n", "m");
  EXPECT_EQ(c.max_gpus_per_job, 32);
  EXPECT_EQ(c.model_catalog, "/x/models.json");
  EXPECT_EQ(c.perf_model_dir, "/x/perf");
}

// A file saved with a UTF-8 byte-order mark reads as without it (the CSV reader strips it too).
TEST(MorphConf, AByteOrderMarkIsNotPartOfTheFirstKey) {
  EXPECT_EQ(parse_morph_conf("\xEF\xBB\xBFMaxGpusPerJob=32\n", "m").max_gpus_per_job, 32);
}

TEST(MorphConf, StateDatabase) {
  EXPECT_EQ(parse_morph_conf("", "m").state_database, "/var/lib/morph/morph.db");
  EXPECT_EQ(parse_morph_conf("StateDatabase=/srv/morph/state.db\n", "m").state_database, "/srv/morph/state.db");
}

TEST(MorphConf, WhatThePolicyAssumesOfJobLengths) {
  const MorphConfig d = parse_morph_conf("", "m");
  EXPECT_DOUBLE_EQ(d.policy.starvation_limit_s, 8 * 3600);
  EXPECT_DOUBLE_EQ(d.policy.unknown_length_prior_s, 900);
  const MorphConfig c = parse_morph_conf("StarvationLimitSeconds=0\nUnknownLengthPriorSeconds=3600\n", "m");
  EXPECT_DOUBLE_EQ(c.policy.starvation_limit_s, 0);  // never overdue
  EXPECT_DOUBLE_EQ(c.policy.unknown_length_prior_s, 3600);
  EXPECT_NE(error_of("UnknownLengthPriorSeconds=0\n").find("UnknownLengthPriorSeconds"), std::string::npos);
  EXPECT_NE(error_of("StarvationLimitSeconds=-1\n").find("StarvationLimitSeconds"), std::string::npos);
}

TEST(MorphConf, RefitErrorThreshold) {
  EXPECT_DOUBLE_EQ(parse_morph_conf("", "m").policy.refit_error_threshold, 0.10);
  EXPECT_DOUBLE_EQ(parse_morph_conf("RefitErrorThreshold=0.25\n", "m").policy.refit_error_threshold, 0.25);
  EXPECT_DOUBLE_EQ(parse_morph_conf("RefitErrorThreshold=0\n", "m").policy.refit_error_threshold, 0);  // never
  EXPECT_NE(error_of("RefitErrorThreshold=-0.1\n").find("RefitErrorThreshold"), std::string::npos);
  EXPECT_NE(error_of("RefitErrorThreshold=lots\n").find("RefitErrorThreshold"), std::string::npos);
}

TEST(MorphConf, RefitPointMaxAgeIsGivenInDaysAndOffByDefault) {
  EXPECT_DOUBLE_EQ(parse_morph_conf("", "m").policy.refit_point_max_age_s, 0);
  EXPECT_DOUBLE_EQ(parse_morph_conf("RefitPointMaxAgeDays=30\n", "m").policy.refit_point_max_age_s, 30 * 86400.0);
  EXPECT_NE(error_of("RefitPointMaxAgeDays=-1\n").find("RefitPointMaxAgeDays"), std::string::npos);
}

TEST(MorphConf, PurgeJobsAfterIsGivenInDaysAndOffByDefault) {
  EXPECT_DOUBLE_EQ(parse_morph_conf("", "m").purge_jobs_after_s, 0);
  EXPECT_DOUBLE_EQ(parse_morph_conf("PurgeJobsAfterDays=90\n", "m").purge_jobs_after_s, 90 * 86400.0);
  EXPECT_NE(error_of("PurgeJobsAfterDays=-1\n").find("PurgeJobsAfterDays"), std::string::npos);
  EXPECT_NE(error_of("PurgeJobsAfterDays=forever\n").find("PurgeJobsAfterDays"), std::string::npos);
}

TEST(MorphConf, MasterPortsAreARangeOfAtLeastEightBelowTheEphemeralPorts) {
  const launch::PortRange fallback = parse_morph_conf("", "m").master_ports;
  EXPECT_EQ(fallback.low, 20000);
  EXPECT_EQ(fallback.high, 32767);
  const launch::PortRange given = parse_morph_conf("MasterPorts=29500-29599\n", "m").master_ports;
  EXPECT_EQ(given.low, 29500);
  EXPECT_EQ(given.high, 29599);
  EXPECT_NE(error_of("MasterPorts=29500\n").find("MasterPorts: '29500' is not LOW-HIGH"), std::string::npos);
  EXPECT_NE(error_of("MasterPorts=29500-29506\n").find("fewer than 8 ports"), std::string::npos);
  EXPECT_NE(error_of("MasterPorts=29600-29500\n").find("'29600-29500': HIGH is below LOW"), std::string::npos);
  EXPECT_NE(error_of("MasterPorts=80-1000\n").find("MasterPorts"), std::string::npos);
  EXPECT_NE(error_of("MasterPorts=30000-70000\n").find("MasterPorts"), std::string::npos);
}

TEST(MorphConf, RestartBackoffIsOnUnlessSaidNo) {
  EXPECT_TRUE(parse_morph_conf("", "m").policy.restart_backoff);
  EXPECT_FALSE(parse_morph_conf("RestartBackoff=no\n", "m").policy.restart_backoff);
  EXPECT_TRUE(parse_morph_conf("RestartBackoff=yes\n", "m").policy.restart_backoff);
  EXPECT_NE(error_of("RestartBackoff=sometimes\n").find("RestartBackoff"), std::string::npos);
}

TEST(MorphConf, Bf16IsAGpuTypesOwnAndDefaultsToYes) {
  EXPECT_TRUE(parse_morph_conf(kGpu, "m").cluster.find_gpu_type("g")->bf16);
  const std::string v100 =
      "GpuType=v100 MemoryGiB=32 Speed=0.4 PeakTflops=125 Link=nvlink LinkBandwidthGBps=120 PcieBandwidthGBps=12 Bf16=no\n";
  EXPECT_FALSE(parse_morph_conf(v100, "m").cluster.find_gpu_type("v100")->bf16);
  std::string bad = v100;
  bad.replace(bad.find("Bf16=no"), 7, "Bf16=maybe");
  EXPECT_NE(error_of(bad).find("Bf16: 'maybe' is not a boolean"), std::string::npos) << error_of(bad);
}

// JABAS jobs on two GPU types need the type as a node feature (GpuTypeBy=feature).
TEST(MorphConf, HeterogeneousJobsNeedGpuTypesAsFeatures) {
  EXPECT_FALSE(parse_morph_conf("", "m").policy.heterogeneous_jobs);
  const std::string node = "NodeType=n Gpu=g Gpus=8 Cpus=96 MemoryGiB=1600 NetworkBandwidthGBps=50 Nics=4 Features=gf\n";
  EXPECT_TRUE(parse_morph_conf(std::string(kGpu) + node + "GpuTypeBy=feature\nHeterogeneousJobs=yes\n", "m")
                  .policy.heterogeneous_jobs);
  const std::string error = error_of("HeterogeneousJobs=yes\n");
  EXPECT_NE(error.find("HeterogeneousJobs=yes needs GpuTypeBy=feature"), std::string::npos) << error;
  // Review of the configuration: these two errors named no line.
  EXPECT_EQ(error_of("\nHeterogeneousJobs=yes\n").rfind("morph.conf:2: HeterogeneousJobs=yes needs", 0), 0u)
      << error_of("\nHeterogeneousJobs=yes\n");
  const std::string bare = error_of(std::string(kGpu) + "GpuTypeBy=feature\n" +
                                    "NodeType=n Gpu=g Gpus=8 Cpus=96 MemoryGiB=1600 NetworkBandwidthGBps=50\n");
  EXPECT_NE(bare.find(":3: NodeType n has no Features="), std::string::npos) << bare;
  EXPECT_NE(bare.find("GpuTypeBy=feature on line 2"), std::string::npos) << bare;
  EXPECT_NE(error_of("HeterogeneousJobs=maybe\n").find("HeterogeneousJobs"), std::string::npos);
}

// How often morphd re-plans a job of --morph-adaptive-batch for its forecast batch.
TEST(MorphConf, AdaptiveEpochSteps) {
  EXPECT_EQ(parse_morph_conf("", "m").policy.adaptive_epoch_steps, 10);
  EXPECT_EQ(parse_morph_conf("AdaptiveEpochSteps=0\n", "m").policy.adaptive_epoch_steps, 0);
  EXPECT_EQ(parse_morph_conf("AdaptiveEpochSteps=25\n", "m").policy.adaptive_epoch_steps, 25);
  for (const char* bad : {"AdaptiveEpochSteps=-1\n", "AdaptiveEpochSteps=ten\n", "AdaptiveEpochSteps=2.5\n"})
    EXPECT_NE(error_of(bad).find("AdaptiveEpochSteps"), std::string::npos) << bad;
}

TEST(MorphConf, TheShippedDefaultParses) {
  const MorphConfig c = load_morph_conf(test::source_dir() + "/etc/morph.conf");
  for (const char* gpu : {"a100", "a800", "h100", "v100", "l40s"}) EXPECT_NE(c.cluster.find_gpu_type(gpu), nullptr) << gpu;
  EXPECT_NE(c.cluster.find_node_type("hgx-a800"), nullptr);
  // bfloat16 needs compute capability 8.0: Volta (7.0), Turing (7.5) and Pascal (6.0) train
  // in fp16, or DeepSpeed's and Megatron's --bf16 fail on them.
  for (const char* gpu : {"v100-32g", "v100-16g", "t4", "p100"}) EXPECT_FALSE(c.cluster.find_gpu_type(gpu)->bf16) << gpu;
  for (const char* gpu : {"a100-80g", "a10", "l40s", "h100", "h200"}) EXPECT_TRUE(c.cluster.find_gpu_type(gpu)->bf16) << gpu;
}

// Every program and the job_submit plugin read the same file: --config, else $MORPH_CONF
// unless empty, else the installed one.
TEST(MorphConf, PathIsGivenThenEnvironmentThenInstalled) {
  const char* before = std::getenv("MORPH_CONF");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("MORPH_CONF", "/env/morph.conf", 1);
  EXPECT_EQ(morph_conf_path("/given/morph.conf"), "/given/morph.conf");
  EXPECT_EQ(morph_conf_path(""), "/env/morph.conf");
  ::setenv("MORPH_CONF", "", 1);
  EXPECT_EQ(morph_conf_path(""), kInstalledMorphConf);
  ::unsetenv("MORPH_CONF");
  EXPECT_EQ(morph_conf_path(""), kInstalledMorphConf);
  if (before != nullptr) ::setenv("MORPH_CONF", saved.c_str(), 1);
}

TEST(MorphConf, ErrorsNameLineAndKey) {
  EXPECT_NE(error_of(std::string(kGpu) + "NodeType=n Gpu=g Gpus=8 Cpus=96 MemoryGiB=1 NetworkBandwidthGBps=1 Colour=red\n")
                .find("morph.conf:2"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kGpu) + "NodeType=n Gpu=g Gpus=8 Cpus=96 MemoryGiB=1 NetworkBandwidthGBps=1 Colour=red\n")
                .find("'Colour'"),
            std::string::npos);
  EXPECT_NE(error_of("GpuType=g MemoryGiB=80 Speed=1\n").find("missing PeakTflops"), std::string::npos);
  EXPECT_NE(error_of("GpuType=g MemoryGiB=eighty Speed=1 PeakTflops=1 Link=nvlink LinkBandwidthGBps=1 PcieBandwidthGBps=1\n")
                .find("MemoryGiB"),
            std::string::npos);
  EXPECT_NE(error_of("GpuType=g MemoryGiB=8 Speed=1 PeakTflops=1 Link=infiniband LinkBandwidthGBps=1 PcieBandwidthGBps=1\n")
                .find("nvlink or pcie"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kGpu) + kGpu).find("morph.conf:2"), std::string::npos);  // duplicate GpuType
  EXPECT_NE(error_of(kNode).find("not a GpuType"), std::string::npos);
  EXPECT_NE(error_of(std::string(kGpu) + kNode + "NodeName=a[1-2] NodeType=nope\n").find("NodeType"), std::string::npos);
  EXPECT_NE(error_of(std::string(kGpu) + kNode + "NodeName=a[2-1] NodeType=n\n").find("morph.conf:3"), std::string::npos);
  EXPECT_NE(error_of("Frobnicate=1\n").find("'Frobnicate'"), std::string::npos);
  EXPECT_NE(error_of("DefaultSla=sometimes\n").find("DefaultSla"), std::string::npos);
  EXPECT_NE(error_of("AllowedPlans=dp,warp\n").find("warp"), std::string::npos);
  EXPECT_NE(error_of("ComputeEfficiency=2\n").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("justaword\n").find("not Key=Value"), std::string::npos);
  EXPECT_NE(error_of("GpuOverheadMiB=1 GpuOverheadMiB=2\n").find("twice"), std::string::npos);
  EXPECT_THROW(load_morph_conf("/nonexistent/morph.conf"), Error);
}

// GPU types, their aliases and node features are written into the jobs' Slurm requests
// (gres:gpu:TYPE:N, --constraint): "a100,80g" became two GRES there, and an empty or
// repeated alias was taken silently.
TEST(MorphConf, GpuTypesAliasesAndFeaturesAreSlurmNames) {
  const std::string rest = " MemoryGiB=80 Speed=1 PeakTflops=312 Link=nvlink LinkBandwidthGBps=150 PcieBandwidthGBps=20\n";
  for (const std::string& bad : std::vector<std::string>{"a100,80g", "a100:80g", "a100=80g", std::string(65, 'a')})
    EXPECT_NE(error_of("GpuType=" + bad + rest).find("is not a Slurm GRES type name"), std::string::npos) << bad;
  EXPECT_NE(error_of("GpuType=g Aliases=a,,b" + rest).find("alias '' is not a Slurm GRES type name"),
            std::string::npos);
  EXPECT_NE(error_of("GpuType=g Aliases=a:b" + rest).find("alias 'a:b' is not"), std::string::npos);
  EXPECT_NE(error_of("GpuType=g Aliases=a,A" + rest).find("alias 'A' is given twice"), std::string::npos);
  EXPECT_NE(error_of("GpuType=g Aliases=G" + rest).find("alias 'G' is the type's own name"), std::string::npos);
  EXPECT_NE(error_of(std::string(kGpu) + "GpuType=h Aliases=g" + rest).find("already a GPU type name"),
            std::string::npos);
  const MorphConfig fine = parse_morph_conf("GpuType=a100-80g Aliases=a100,a100_sxm.4" + rest, "m");
  EXPECT_EQ(fine.cluster.find_gpu_type("A100_SXM.4")->name, "a100-80g");
  const std::string node = "NodeType=n Gpu=g Gpus=8 Cpus=96 MemoryGiB=1600 NetworkBandwidthGBps=50 Features=";
  for (const std::string bad : {"a&b", "ampere,", "a,,b", "x|y", "a*2"})
    EXPECT_NE(error_of(std::string(kGpu) + node + bad + "\n").find("is not a Slurm feature name"), std::string::npos)
        << bad;
  EXPECT_EQ(parse_morph_conf(std::string(kGpu) + node + "ampere,a100-80g,rack_1.2\n", "m").cluster.node_types()[0].features,
            (std::vector<std::string>{"ampere", "a100-80g", "rack_1.2"}));
}

TEST(MorphConf, MorphdAddressIsHostColonPort) {
  EXPECT_EQ(parse_morph_conf("MorphdAddress=ctl01:6830\n", "morph.conf").morphd_address, "ctl01:6830");
  EXPECT_EQ(parse_morph_conf("MorphdAddress=[::1]:6830\n", "morph.conf").morphd_address, "[::1]:6830");
  EXPECT_TRUE(parse_morph_conf("", "morph.conf").morphd_address.empty());
  EXPECT_NE(error_of("MorphdAddress=ctl01\n").find("morph.conf:1: MorphdAddress: 'ctl01' is not HOST:PORT (no port)"),
            std::string::npos)
      << error_of("MorphdAddress=ctl01\n");
  EXPECT_NE(error_of("MorphdAddress=ctl01:0\n").find("MorphdAddress: port"), std::string::npos);
  EXPECT_NE(error_of("MorphdAddress=ctl01:65536\n").find("MorphdAddress: port"), std::string::npos);
  EXPECT_NE(error_of("MorphdAddress=:6830\n").find("no host"), std::string::npos);
  EXPECT_NE(error_of("MorphdAddress=ct/l:6830\n").find("bad character"), std::string::npos);
  EXPECT_NE(error_of("MorphdAddress=::1:6830\n").find("[ADDRESS]:PORT"), std::string::npos);
  // Review of the configuration: these passed the load and failed where morphd listens or
  // morphrun connects.
  EXPECT_NE(error_of("MorphdAddress=[:]:6830\n").find("not an IPv6 address"), std::string::npos);
  EXPECT_NE(error_of("MorphdAddress=ctl01:+6830\n").find("not a number of digits"), std::string::npos);
}

}  // namespace
}  // namespace morph
