// One morphd round on a synthetic cluster of 500 nodes (mixed node types of
// etc/morph.conf, 4000 GPUs) and 5000 Morph jobs with valid records (issue 13: under
// 1 s): the Scheduler builds the policy's view from the snapshot, runs Morphling and plans
// the reconfigurations. Reading the snapshot from slurmctld is not in it (see
// tests/bench/morphd_load.sh). Ends with the summary lines of `make bench-morphd`:
//   round: nodes=500 jobs=5000 <case>_ms=<median ms of one round>
//   targets: ...
// Cases: first (a fresh daemon: every plan search included, all jobs pending), pending
// (the same with a warm oracle), busy (the round after the first round's starts ran),
// recorded (busy, not a dry run: each decision and wait recorded with its alternatives
// in a memory journal; the reconfigurations are rolled back by a slurmctld that has
// forgotten the jobs).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/scheduler.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/record/job_record.h"
#include "median_reporter.h"
#include "tests/forgetful_slurm.h"

namespace morph::daemon {
namespace {

constexpr int kNodes = 500;
constexpr int kJobs = 5000;

// 500 nodes of five node types of etc/morph.conf, 8 GPUs each.
constexpr struct {
  const char* node_type;
  int count;
} kNodeMix[] = {{"dgx-a100", 160}, {"dgx-h100", 120}, {"hgx-a800", 100}, {"dgx1-v100", 60}, {"l40s-node", 60}};

const MorphConfig& config() {
  static const MorphConfig c = [] {
    std::ifstream in(std::string(MORPH_BENCH_SRCDIR) + "/etc/morph.conf");
    std::stringstream text;
    text << in.rdbuf();
    int nodes = 0;
    for (const auto& group : kNodeMix) {
      text << fmt::format("\nNodeName=n[{:03d}-{:03d}] NodeType={}", nodes + 1, nodes + group.count, group.node_type);
      nodes += group.count;
    }
    text << '\n';
    return parse_morph_conf(text.str(), "bench morph.conf");
  }();
  return c;
}

const Catalog& catalog() {
  static const Catalog c = Catalog::load_file(std::string(MORPH_BENCH_SRCDIR) + "/share/models.json");
  return c;
}

// Applications as bench_policy.cc has them: model, global batch, micro-batch, ZeRO stage.
constexpr struct {
  const char* model;
  std::int64_t global_batch;
  int micro_batch;
  int zero_stage;
} kApps[] = {{"vit-86m", 512, 64, 0},  {"roberta-355m", 512, 64, 0}, {"bert-336m", 256, 32, 0},
             {"t5-1.2b", 128, 8, 2},   {"gpt2-1.5b", 128, 4, 2},     {"llama2-7b", 64, 1, 2}};

// A submitted job's record: `gpus` GPUs of `gpu_type` with data parallelism, the model's
// global batch scaled by `batch_scale`.
std::string submitted_record(int app_index, int batch_scale, int gpus, const std::string& gpu_type, Sla sla,
                             std::int64_t iterations) {
  const auto& app = kApps[app_index];
  const std::int64_t global_batch = app.global_batch * batch_scale;
  JobRecord r;
  r.request.model = app.model;
  r.request.global_batch = global_batch;
  r.request.sla = sla;
  r.request.sla_given = true;
  r.request.iterations = iterations;
  r.current.gpu_type = gpu_type;
  r.current.nodes = std::max(1, gpus / 8);
  r.current.gpus_per_node = std::min(gpus, 8);
  r.current.cpus_per_gpu = 4;
  ExecutionPlan& p = r.current.plan;
  p.dp = gpus;
  p.zero_stage = app.zero_stage;
  const std::int64_t per_replica = global_batch / gpus;
  p.micro_batch_size = static_cast<int>(std::min<std::int64_t>(app.micro_batch, per_replica));
  p.ga_steps = static_cast<int>(per_replica / p.micro_batch_size);
  r.current.iter_ms = 1000;
  return to_admin_comment(r);
}

// Every job pending, as slurmctld reports them on a daemon's first round: 18 applications
// (6 models, 3 batch sizes each), mostly small requests (1 to 64 GPUs), 20% guaranteed,
// on a GPU type of the cluster.
ClusterSnapshot all_pending() {
  ClusterSnapshot s;
  s.now_s = 100000;
  for (const NodeRecord& n : config().cluster.nodes()) s.nodes.push_back({n.name, true, 0});
  std::mt19937 rng(20261123);
  std::discrete_distribution<int> app_of({3, 3, 4, 3, 3, 2});
  std::discrete_distribution<int> log2_gpus({30, 25, 20, 15, 6, 3, 1});
  std::uniform_int_distribution<std::size_t> type_of(0, std::size(kNodeMix) - 1);
  std::uniform_real_distribution<double> unit(0, 1);
  std::uniform_int_distribution<int> log2_batch_scale(0, 2);
  for (int i = 0; i < kJobs; ++i) {
    const int app = app_of(rng);
    const int batch_scale = 1 << log2_batch_scale(rng);
    const int gpus = std::min<int>(1 << log2_gpus(rng), static_cast<int>(kApps[app].global_batch));
    const NodeType& type = *config().cluster.find_node_type(kNodeMix[type_of(rng)].node_type);
    const Sla sla = unit(rng) < 0.2 ? Sla::guaranteed : Sla::best_effort;
    const auto iterations = static_cast<std::int64_t>(std::round(100 * std::pow(1000.0, unit(rng))));
    SlurmJob j;
    j.id = static_cast<std::uint32_t>(1000 + i);
    j.user_id = 1000;
    j.admin_comment = submitted_record(app, batch_scale, gpus, config().cluster.gpu_of(type).name, sla, iterations);
    j.submit_time_s = s.now_s - 3600 * unit(rng);
    s.jobs.push_back(std::move(j));
  }
  return s;
}

// The snapshot five minutes after the first round's starts took effect: those jobs run
// on the nodes the policy gave them, under their new records.
ClusterSnapshot busy(const ClusterSnapshot& pending) {
  const PerfStore perf;
  const ViewContext context{config(), catalog(), perf};
  const BuiltView built = build_view(pending, context);
  policy::PlanOracle oracle(built.apps, config().memory, config().max_gpus_per_job);
  const std::vector<policy::Decision> decisions = policy::make_policy("morphling")->schedule(built.view, oracle);
  std::map<std::string, const policy::Decision*> by_job;
  for (const policy::Decision& d : decisions) by_job[d.job] = &d;
  std::map<std::uint32_t, std::string> started;
  for (const Reconfiguration& r : plan_reconfigurations(built, decisions, oracle, nullptr))
    if (r.path == Path::start) started[r.job] = r.to_record;
  ClusterSnapshot s = pending;
  std::map<std::string, int> used;
  for (SlurmJob& j : s.jobs) {
    const auto record = started.find(j.id);
    if (record == started.end()) continue;
    j.phase = JobPhase::running;
    j.admin_comment = record->second;
    j.start_time_s = s.now_s;
    for (const policy::Slice& slice : by_job.at(std::to_string(j.id))->target.slices) {
      const std::string& node = built.view.nodes[static_cast<std::size_t>(slice.node)].name;
      j.nodes.push_back(node);
      used[node] += slice.gpus;
    }
  }
  for (SlurmNode& n : s.nodes) n.gpus_in_use = used[n.name];
  s.now_s += 300;
  return s;
}

const ClusterSnapshot& pending_snapshot() {
  static const ClusterSnapshot s = all_pending();
  return s;
}

const ClusterSnapshot& busy_snapshot() {
  static const ClusterSnapshot s = busy(pending_snapshot());
  return s;
}

using test::ForgetfulSlurm;

// What morphd holds between rounds: its journal, reconfigurer and scheduler (with the
// oracle it keeps while the applications stay the same).
struct Daemon {
  PerfStore perf;
  ForgetfulSlurm slurm;
  MemoryJournal journal;
  Reconfigurer reconfigurer{slurm, journal, {}, nullptr};
  Scheduler scheduler{{config(), catalog(), perf}, policy::make_policy("morphling"), reconfigurer, journal};
};

void report(benchmark::State& state, const RoundReport& r, const ClusterSnapshot& s) {
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(s.jobs.size()));  // jobs per second
  state.counters["jobs"] = r.jobs;
  state.counters["decided"] = r.started;
  state.SetLabel(fmt::format("{} nodes, {} jobs", s.nodes.size(), s.jobs.size()));
}

void BM_RoundFirst(benchmark::State& state) {
  const ClusterSnapshot& s = pending_snapshot();
  RoundReport r;
  for (auto _ : state) {
    Daemon d;
    r = d.scheduler.round(s, true);
    benchmark::DoNotOptimize(r);
  }
  report(state, r, s);
}

// A dry-run round on `s` by a daemon that has already run one.
void warm_round(benchmark::State& state, const ClusterSnapshot& s) {
  Daemon d;
  RoundReport r = d.scheduler.round(s, true);
  for (auto _ : state) {
    r = d.scheduler.round(s, true);
    benchmark::DoNotOptimize(r);
  }
  report(state, r, s);
}

void BM_RoundPending(benchmark::State& state) { warm_round(state, pending_snapshot()); }
void BM_RoundBusy(benchmark::State& state) { warm_round(state, busy_snapshot()); }

void BM_RoundRecorded(benchmark::State& state) {
  const ClusterSnapshot& s = busy_snapshot();
  Daemon d;
  RoundReport r = d.scheduler.round(s, true);
  for (auto _ : state) {
    r = d.scheduler.round(s, false);
    benchmark::DoNotOptimize(r);
  }
  report(state, r, s);
  state.counters["recorded"] = static_cast<double>(d.journal.decisions().size());
}

BENCHMARK(BM_RoundFirst)->Iterations(1)->Repetitions(3)->Unit(benchmark::kMillisecond)->ReportAggregatesOnly(true);
BENCHMARK(BM_RoundPending)->Iterations(3)->Repetitions(3)->Unit(benchmark::kMillisecond)->ReportAggregatesOnly(true);
BENCHMARK(BM_RoundBusy)->Iterations(3)->Repetitions(3)->Unit(benchmark::kMillisecond)->ReportAggregatesOnly(true);
BENCHMARK(BM_RoundRecorded)->Iterations(3)->Repetitions(3)->Unit(benchmark::kMillisecond)->ReportAggregatesOnly(true);

}  // namespace
}  // namespace morph::daemon

int main(int argc, char** argv) {
  const auto medians = morph::bench::run_benchmarks(argc, argv);
  if (!medians) return 1;
  std::string line, targets;
  for (const char* name : {"first", "pending", "busy", "recorded"}) {
    std::string bench = fmt::format("BM_Round{}", name);
    bench[8] = static_cast<char>(std::toupper(static_cast<unsigned char>(bench[8])));
    const auto it = medians->find(bench);
    if (it == medians->end()) continue;  // filtered out
    line += fmt::format(" {}_ms={:.1f}", name, it->second);
    targets += fmt::format("{}{} <= 1000 ms {}", targets.empty() ? "" : ", ", name, it->second <= 1000 ? "met" : "MISSED");
  }
  std::printf("round: nodes=%d jobs=%d%s\n", morph::daemon::kNodes, morph::daemon::kJobs, line.c_str());
  if (!targets.empty()) std::printf("targets: %s\n", targets.c_str());
  return 0;
}
