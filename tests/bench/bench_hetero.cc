// Benchmark of JABAS's configuration solver (seed 004 §7.6: 27.58 s at M = 2,592): the
// best configuration of one set of 16 GPUs (4 servers of 4, four GPU kinds, so N_H = 8
// GPU pairs) at one local batch with M decoupled workers per group. Ends with the summary
// lines of `make bench-hetero`:
//   hetero: M=<m> ms=<median ms for one solve>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "libmorph/hetero/hetero_search.h"
#include "median_reporter.h"

namespace morph {
namespace {

constexpr int kLocalBatch = 32;

// Synthetic profiles shaped like the quickstart's ResNet-50 ones: a V100-like server, a
// P100-like one and two faster ones, each with its own n_max and gain from more workers.
JabasProfile synthetic_profile() {
  JabasProfile p;
  p.dir = "synthetic";
  struct Kind {
    const char* name;
    double speed;      // relative to the V100-like server
    int max_workers;
    double gain;       // throughput of n_max workers over n_max single ones
  };
  for (const Kind& k : {Kind{"v100", 1.0, 3, 1.13}, Kind{"p100", 0.65, 4, 1.10}, Kind{"titanrtx", 1.15, 4, 1.15},
                        Kind{"rtx3090", 2.5, 2, 1.05}}) {
    JabasServer s{k.name, k.name, 4, 15.75e9, 12.5e9, {}};
    JabasBatchProfile b;
    b.max_workers = k.max_workers;
    const double fwd_bwd_1 = 98.7 / k.speed;
    b.comp.push_back({1, 4.0, fwd_bwd_1 / 3, fwd_bwd_1 * 2 / 3, 5.0, 0.0, 6.29});
    const double fwd_bwd_n = fwd_bwd_1 * k.max_workers / k.gain;
    b.comp.push_back({k.max_workers, 4.0 * k.max_workers, fwd_bwd_n / 3, fwd_bwd_n * 2 / 3, 4.5,
                      2.2 * (k.max_workers - 1), 6.29});
    s.by_local_batch[kLocalBatch] = b;
    p.servers.push_back(std::move(s));
  }
  p.intra = {{0.2, 1.0, 2.0, 4.0}, {3.1, 3.7, 4.9, 6.2}, "intra"};
  p.inter = {{0.5, 2.6, 5.2, 10.5}, {4.4, 4.6, 7.7, 11.8}, "inter"};
  p.bucket_mib = {7.81, 30.04, 25.04, 25.25, 9.2};
  return p;
}

void BM_HeteroSolve(benchmark::State& state) {
  const JabasProfile profile = synthetic_profile();
  std::vector<const JabasServer*> servers;
  for (const JabasServer& s : profile.servers) servers.push_back(&s);
  const std::int64_t m = state.range(0);
  HeteroConfig c;
  for (auto _ : state) {
    c = best_hetero_config(profile, whole_servers(servers), 2 * kLocalBatch * m);
    benchmark::DoNotOptimize(c);
  }
  if (!c.feasible()) state.SkipWithError("no configuration");
  state.counters["iter_ms"] = c.iter_ms;
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("16 GPUs, 4 kinds, N_H 8, one local batch");
}
BENCHMARK(BM_HeteroSolve)->Arg(162)->Arg(648)->Arg(2592)->Arg(10368)->Unit(benchmark::kMillisecond)
    ->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace
}  // namespace morph

int main(int argc, char** argv) {
  const auto medians = morph::bench::run_benchmarks(argc, argv);
  if (!medians) return 1;
  for (int m : {162, 648, 2592, 10368}) {
    const auto it = medians->find("BM_HeteroSolve/" + std::to_string(m));
    if (it != medians->end()) std::printf("hetero: M=%d ms=%.3f\n", m, it->second);
  }
  return 0;
}
