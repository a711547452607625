// Benchmarks of the policy engine: one steady-state round of Morphling on busy synthetic
// A800 clusters of 64 to 16384 GPUs, and the whole base simulation of the Morphling
// artifact (406 jobs on 8x8xa800, measured speeds from its traces). Ends with the summary
// lines of `make bench-policy`:
//   round: gpus=<G> jobs=<J> ms=<median ms for one round>
//   round-all-pending: gpus=<G> jobs=<J> ms=<median ms when every job waits>
//   first-curves: nodes=2000 apps=6 ms=<median ms for the six curves on a cold oracle>
//   simulation: workload=base jobs=<N> s=<median s for sim::simulate>
// and the targets: a round within 10 ms, 100 ms and 1 s, the six first curves at 2,000
// nodes within 1 s, the simulation within 5 s.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "libmorph/artifact/artifact_spec.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/forward_model.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/policy/policy.h"
#include "libmorph/sim/apps.h"
#include "libmorph/sim/simulator.h"
#include "libmorph/sim/workload.h"
#include "median_reporter.h"

namespace morph {
namespace {

using policy::ClusterView;
using policy::JobState;
using policy::PlanOracle;

const MorphConfig& config() {
  static const MorphConfig c = load_morph_conf(std::string(MORPH_BENCH_SRCDIR) + "/etc/morph.conf");
  return c;
}

const Catalog& catalog() {
  static const Catalog c = Catalog::load_file(std::string(MORPH_BENCH_SRCDIR) + "/share/models.json");
  return c;
}

// ---------------------------------------------------------------------------------------
// One scheduling round

// The artifact's applications (global batch, micro-batch, sequence) with FLOP-estimate
// models on A800, and the ZeRO stage / offload their data-parallel requests use.
struct SyntheticApp {
  const char* name;
  const char* model;
  std::int64_t global_batch;
  int micro_batch;
  std::int64_t seq_len;
  int zero_stage;
  bool offload;
};
constexpr SyntheticApp kApps[] = {
    {"vit", "vit-86m", 512, 64, 197, 0, false},      {"roberta", "roberta-355m", 512, 64, 512, 0, false},
    {"bert", "bert-336m", 256, 32, 512, 0, false},   {"t5", "t5-1.2b", 128, 8, 768, 2, false},
    {"gpt2", "gpt2-1.5b", 128, 4, 1024, 2, false},  {"llama2-7b", "llama2-7b", 64, 1, 2048, 2, true},
};

std::map<std::string, policy::AppProfile> synthetic_profiles() {
  const GpuType& a800 = *config().cluster.find_gpu_type("a800");
  std::map<std::string, policy::AppProfile> apps;
  for (const SyntheticApp& s : kApps) {
    const ModelSpec& model = *catalog().find(s.model);
    policy::AppProfile p;
    p.workload = Workload{model, s.global_batch, s.seq_len};
    p.perf = PerfModel{estimate_forward_model(model, s.seq_len, a800, config().compute_efficiency), PerfParams{}};
    apps.emplace(s.name, std::move(p));
  }
  return apps;
}

// Pure data parallelism on `gpus` GPUs, accumulating gradients so that the global batch divides.
ExecutionPlan data_parallel(const SyntheticApp& app, int gpus) {
  ExecutionPlan p;
  p.dp = gpus;
  p.zero_stage = app.zero_stage;
  p.offload = app.offload;
  const std::int64_t per_replica = app.global_batch / gpus;
  p.micro_batch_size = static_cast<int>(std::min<std::int64_t>(app.micro_batch, per_replica));
  p.ga_steps = static_cast<int>(per_replica / p.micro_batch_size);
  return p;
}

// `count` jobs submitted in [from_s, to_s): mostly small requests, 20% guaranteed,
// 100 to 100000 iterations left (log-uniform).
std::vector<JobState> synthetic_jobs(std::mt19937& rng, int first_id, int count, double from_s, double to_s) {
  const std::map<std::string, policy::AppProfile> profiles = synthetic_profiles();
  std::discrete_distribution<int> app_of({3, 3, 4, 3, 3, 2});
  std::discrete_distribution<int> log2_gpus({30, 25, 20, 15, 6, 3, 1});  // 1 .. 64 GPUs
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<JobState> jobs;
  for (int i = 0; i < count; ++i) {
    const SyntheticApp& app = kApps[app_of(rng)];
    JobState j;
    j.id = fmt::format("job{:05d}", first_id + i);
    j.app = app.name;
    j.sla = unit(rng) < 0.2 ? Sla::guaranteed : Sla::best_effort;
    j.workload = profiles.at(app.name).workload;
    const int gpus = std::min<int>(1 << log2_gpus(rng), static_cast<int>(app.global_batch));
    j.requested_plan = data_parallel(app, gpus);
    j.requested_cpus = gpus * 4;
    j.submit_time_s = from_s + (to_s - from_s) * unit(rng);
    j.declared_iterations = std::round(100 * std::pow(1000.0, unit(rng)));
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// A busy cluster one round after half of its jobs arrived, and the oracle that scheduled it.
struct BusyCluster {
  ClusterView view;
  std::unique_ptr<PlanOracle> oracle;
  int running = 0;
};

// Half of the jobs arrive at once and the policy starts what fits (a round at t=0); they
// run, past their restart penalty, when the other half arrives before the round at t=300 s:
// the steady-state round a daemon runs every 60 s. The production daemon keeps one oracle
// alive, so the setup round warms the oracle that the timed rounds reuse.
std::unique_ptr<BusyCluster> busy_cluster(int gpus, int jobs) {
  auto c = std::make_unique<BusyCluster>();
  c->view.nodes = policy::nodes_from_spec(fmt::format("{}x8xa800", gpus / 8), config().cluster, "bench");
  c->oracle = std::make_unique<PlanOracle>(synthetic_profiles(), config().memory, config().max_gpus_per_job);
  std::mt19937 rng(20240601);
  c->view.jobs = synthetic_jobs(rng, 0, jobs / 2, -86400, 0);
  const std::vector<policy::Decision> first = policy::make_policy("morphling")->schedule(c->view, *c->oracle);
  c->view.now_s = 300;
  for (std::size_t i = 0; i < c->view.jobs.size(); ++i) {
    JobState& j = c->view.jobs[i];
    j.current = first[i].target;
    if (!j.running()) continue;
    ++c->running;
    j.ready_s = c->view.restart.requeue_s;
    j.measured_iteration_s = c->oracle->predict_s(j, j.current.plan, c->view.nodes, j.current.slices);
  }
  for (JobState& j : synthetic_jobs(rng, jobs / 2, jobs - jobs / 2, 240, 300)) c->view.jobs.push_back(std::move(j));
  return c;
}

// Built once per size and kept across repetitions, as a daemon keeps its oracle.
BusyCluster& busy_cluster_cached(int gpus, int jobs) {
  static std::map<std::pair<int, int>, std::unique_ptr<BusyCluster>> clusters;
  std::unique_ptr<BusyCluster>& c = clusters[{gpus, jobs}];
  if (!c) c = busy_cluster(gpus, jobs);
  return *c;
}

void BM_MorphlingRound(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const int jobs = static_cast<int>(state.range(1));
  BusyCluster& c = busy_cluster_cached(gpus, jobs);
  const std::unique_ptr<policy::Policy> morphling = policy::make_policy("morphling");
  std::vector<policy::Decision> decisions;
  for (auto _ : state) {
    decisions = morphling->schedule(c.view, *c.oracle);
    benchmark::DoNotOptimize(decisions);
  }
  // What the round does: how many jobs it starts, reconfigures and preempts.
  std::map<policy::Action, int> actions;
  for (std::size_t i = 0; i < decisions.size(); ++i) ++actions[policy::action_of(c.view.jobs[i], decisions[i].target)];
  state.SetItemsProcessed(state.iterations() * jobs);  // jobs decided per second
  state.counters["running"] = c.running;
  state.counters["start"] = actions[policy::Action::start];
  state.counters["reconf"] = actions[policy::Action::reconfigure];
  state.counters["preempt"] = actions[policy::Action::preempt];
  state.counters["searches"] = static_cast<double>(c.oracle->stats().searches);
  state.SetLabel(fmt::format("{}x8xa800", gpus / 8));
}
// Fixed iterations, fewer where a round is longer: the three sizes take a few seconds, and
// well under a minute on a slow two-core machine.
BENCHMARK(BM_MorphlingRound)->Args({64, 30})->Iterations(1000)->Unit(benchmark::kMillisecond)
    ->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MorphlingRound)->Args({2048, 5120})->Iterations(50)->Unit(benchmark::kMillisecond)
    ->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MorphlingRound)->Args({16384, 40000})->Iterations(10)->Unit(benchmark::kMillisecond)
    ->Repetitions(5)->ReportAggregatesOnly(true);

// The same jobs all waiting, as on a daemon's first round or after a drained cluster
// returns: the round with the most decisions to make (every job starts or waits). The
// oracle is the busy cluster's, warm.
void BM_MorphlingRoundAllPending(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const int jobs = static_cast<int>(state.range(1));
  BusyCluster& c = busy_cluster_cached(gpus, jobs);
  ClusterView pending = c.view;
  for (JobState& j : pending.jobs) {
    j.current = {};
    j.ready_s = 0;
    j.measured_iteration_s = 0;
  }
  const std::unique_ptr<policy::Policy> morphling = policy::make_policy("morphling");
  std::vector<policy::Decision> decisions;
  for (auto _ : state) {
    decisions = morphling->schedule(pending, *c.oracle);
    benchmark::DoNotOptimize(decisions);
  }
  int started = 0;
  for (const policy::Decision& d : decisions) started += d.target.empty() ? 0 : 1;
  state.SetItemsProcessed(state.iterations() * jobs);
  state.counters["start"] = started;
  state.SetLabel(fmt::format("{}x8xa800, all pending", gpus / 8));
}
BENCHMARK(BM_MorphlingRoundAllPending)->Args({64, 30})->Iterations(200)->Unit(benchmark::kMillisecond)
    ->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MorphlingRoundAllPending)->Args({2048, 5120})->Iterations(10)->Unit(benchmark::kMillisecond)
    ->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MorphlingRoundAllPending)->Args({16384, 40000})->Iterations(2)->Unit(benchmark::kMillisecond)
    ->Repetitions(5)->ReportAggregatesOnly(true);

// The sensitivity curves of the six applications on a cold oracle, as morphd draws them
// after a start or a refit, with MaxGpusPerJob covering the whole cluster of N A800 nodes
// (every count up to it is weighed; morphd's uniform nodes).
void BM_FirstCurves(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const std::vector<policy::NodeState> view = policy::nodes_from_spec(fmt::format("{}x8xa800", nodes), config().cluster, "bench");
  std::mt19937 rng(7);
  const std::vector<JobState> jobs = synthetic_jobs(rng, 0, 60, 0, 1);
  long searches = 0;
  for (auto _ : state) {
    PlanOracle oracle(synthetic_profiles(), config().memory, 8 * nodes);
    oracle.require_uniform_nodes();
    std::map<std::string, bool> drawn;
    for (const JobState& j : jobs)
      if (!drawn[j.app]) {
        drawn[j.app] = true;
        benchmark::DoNotOptimize(oracle.curve(j, policy::PlanFreedom::any, true, view, 0));
      }
    searches = oracle.stats().searches;
  }
  state.counters["searches"] = static_cast<double>(searches);
  state.SetLabel(fmt::format("{}x8xa800, MaxGpusPerJob={}", nodes, 8 * nodes));
}
BENCHMARK(BM_FirstCurves)->Arg(64)->Arg(512)->Arg(2000)->Unit(benchmark::kMillisecond)->Repetitions(5)
    ->ReportAggregatesOnly(true);

// ---------------------------------------------------------------------------------------
// The base simulation of the artifact (`morph simulate --workload .../workload-base.csv
// --truth .../traces --policy morphling --cluster 8x8xa800 --restart-penalty 260
// --interval 60`: morphd's payback wait and online refit, as morph.conf sets them)

// $MORPH_ARTIFACT_DIR or ../shared/data/morphling-artifact beside the source tree.
std::string artifact_dir() {
  if (const char* env = std::getenv("MORPH_ARTIFACT_DIR"); env != nullptr && *env != '\0') return env;
  return std::string(MORPH_BENCH_SRCDIR) + "/../shared/data/morphling-artifact";
}

bool have_artifact() {
  namespace fs = std::filesystem;
  const fs::path dir = artifact_dir();
  return fs::is_directory(dir / "profile") && fs::is_directory(dir / "traces") &&
         fs::exists(dir / "workloads" / "workload-base.csv");
}

struct BaseSimulation {
  std::map<std::string, sim::App> apps;  // models fitted on the profile plus 3 trace rows
  std::vector<sim::SimJob> jobs;
  sim::TraceTruth truth;
  std::vector<policy::NodeState> nodes;
  sim::SimOptions options;
  int max_gpus_per_job = 0;
};

// What `morph simulate` does before it simulates: load, fit, read the trace.
BaseSimulation load_base_simulation() {
  const std::string dir = artifact_dir();
  const ArtifactSpec spec = load_artifact_spec(std::string(MORPH_BENCH_SRCDIR) + "/share/morphling-artifact.json");
  BaseSimulation b;
  b.apps = sim::artifact_apps(spec, catalog(), config(), dir, PerfStore::load_dir(config().perf_model_dir), 3);
  for (const sim::TraceJob& row : sim::read_workload(dir + "/workloads/workload-base.csv"))
    b.jobs.push_back(sim::sim_job(row, b.apps));
  std::map<std::string, ArtifactWorkload> workloads;
  for (const auto& [name, app] : b.apps) workloads.emplace(name, app.artifact);
  b.truth = sim::TraceTruth::load(dir + "/traces", workloads, spec, config().cluster);
  b.nodes = policy::nodes_from_spec("8x8xa800", config().cluster, "bench");
  b.options.restart = policy::RestartCosts::uniform(260);
  b.options.interval_s = 60;
  b.options.payback_s = 260;
  b.options.refit.error_threshold = config().policy.refit_error_threshold;
  int gpus = 0;
  for (const policy::NodeState& n : b.nodes) gpus += n.type.gpus;
  b.max_gpus_per_job = std::max(config().max_gpus_per_job, gpus);
  return b;
}

sim::SimResult simulate_base(const BaseSimulation& b) {
  // A fresh oracle, as every `morph simulate` run starts with one.
  PlanOracle oracle(sim::profiles_of(b.apps), config().memory, b.max_gpus_per_job);
  const std::unique_ptr<policy::Policy> morphling = policy::make_policy("morphling");
  return sim::simulate(b.jobs, b.nodes, *morphling, oracle, b.truth, b.options);
}

const BaseSimulation& base_simulation() {
  static const BaseSimulation b = load_base_simulation();
  return b;
}

int base_jobs = 0;  // for the summary line

// sim::simulate alone (with its fresh oracle); loading and fitting are setup.
void BM_BaseSimulation(benchmark::State& state) {
  const BaseSimulation& b = base_simulation();
  base_jobs = static_cast<int>(b.jobs.size());
  sim::SimResult result;
  for (auto _ : state) {
    result = simulate_base(b);
    benchmark::DoNotOptimize(result);
  }
  state.counters["jobs"] = static_cast<double>(b.jobs.size());
  state.counters["rounds"] = static_cast<double>(result.rounds);
  state.SetLabel("workload-base, morphling, 8x8xa800");
}

// Everything `morph simulate` does: configuration, catalog, model fits, trace, simulation.
void BM_BaseSimulationEndToEnd(benchmark::State& state) {
  for (auto _ : state) {
    const BaseSimulation b = load_base_simulation();
    benchmark::DoNotOptimize(simulate_base(b));
  }
  state.SetLabel("load + fit + simulate");
}

}  // namespace
}  // namespace morph

int main(int argc, char** argv) {
  const bool simulate = morph::have_artifact();
  if (simulate) {
    benchmark::RegisterBenchmark("BM_BaseSimulation", morph::BM_BaseSimulation)
        ->Iterations(5)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
    benchmark::RegisterBenchmark("BM_BaseSimulationEndToEnd", morph::BM_BaseSimulationEndToEnd)
        ->Iterations(1)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
  }
  const auto run = morph::bench::run_benchmarks(argc, argv);
  if (!run) return 1;
  const auto& medians = *run;
  std::string targets;
  auto target = [&](const std::string& what, double value, double limit, const char* unit) {
    targets += fmt::format("{}{} <= {:g} {} {}", targets.empty() ? "" : ", ", what, limit, unit,
                           value <= limit ? "met" : "MISSED");
  };
  for (auto [gpus, jobs, limit_ms] : {std::tuple{64, 30, 10.0}, {2048, 5120, 100.0}, {16384, 40000, 1000.0}}) {
    auto it = medians.find(fmt::format("BM_MorphlingRound/{}/{}", gpus, jobs));
    if (it == medians.end()) continue;  // filtered out
    std::printf("round: gpus=%d jobs=%d ms=%.3f\n", gpus, jobs, it->second);
    target(fmt::format("round gpus={}", gpus), it->second, limit_ms, "ms");
  }
  for (auto [gpus, jobs, limit_ms] : {std::tuple{64, 30, 10.0}, {2048, 5120, 100.0}, {16384, 40000, 1000.0}}) {
    auto it = medians.find(fmt::format("BM_MorphlingRoundAllPending/{}/{}", gpus, jobs));
    if (it == medians.end()) continue;
    std::printf("round-all-pending: gpus=%d jobs=%d ms=%.3f\n", gpus, jobs, it->second);
    target(fmt::format("all-pending round gpus={}", gpus), it->second, limit_ms, "ms");
  }
  if (auto it = medians.find("BM_FirstCurves/2000"); it != medians.end()) {
    std::printf("first-curves: nodes=2000 apps=6 ms=%.3f\n", it->second);
    target("first curves nodes=2000", it->second, 1000, "ms");
  }
  if (!simulate) {
    std::printf("simulation: skipped: artifact not found at %s\n", morph::artifact_dir().c_str());
  } else if (auto it = medians.find("BM_BaseSimulation"); it != medians.end()) {
    std::printf("simulation: workload=base jobs=%d s=%.3f\n", morph::base_jobs, it->second / 1e3);
    target("simulation", it->second / 1e3, 5, "s");
    if (auto e2e = medians.find("BM_BaseSimulationEndToEnd"); e2e != medians.end())
      std::printf("simulation-end-to-end: workload=base s=%.3f (load, fit, simulate)\n", e2e->second / 1e3);
  }
  if (!targets.empty()) std::printf("targets: %s\n", targets.c_str());
  return 0;
}
