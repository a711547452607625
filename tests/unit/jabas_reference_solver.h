// Test-only: JABAS's own configuration solver as its public code runs it (IIDP's
// DynamicProgrammingSolver over per-GPU-pair tables, driven by JABAS's
// configuration_solver.py), re-written in C++ over Morph's iteration model so that the two
// solvers see the same predicted times. Its quirks are kept: the table's caps on workers
// and GA steps, the pruning by (workers, pair), the greedy row walk, and the iteration
// time of a combined set that keeps the time of a configuration it replaced.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "libmorph/hetero/hetero_search.h"

namespace morph::test {

struct ReferenceResult {
  bool feasible = false;
  int local_batch = 0;
  std::map<int, std::pair<int, int>> pairs;  // pair -> (n_vsw, n_GA)
  double reported_throughput = 0;            // what JABAS's DP reports
  double throughput = 0;                     // Morph's model on that configuration
};

namespace reference_detail {

struct Entry {
  double t_s;
  int workers;
  int pair;
  int n;
  int ga;
};

struct Cell {
  double thp = 0;
  double t_s = 0;
  int workers = 0;
  std::map<int, std::pair<int, int>> set;
};

inline int set_workers(const std::map<int, std::pair<int, int>>& set) {
  int w = 0;
  for (const auto& [pair, c] : set) w += c.first * (c.second + 1);
  return w;
}

// DynamicProgrammingSolver.create_table + solve for `total` workers (both groups).
inline ReferenceResult solve(const std::vector<GpuIterationModel>& models, const std::vector<const JabasServer*>& servers,
                             int lbs, std::int64_t global_batch, int total) {
  const int alloc_unit = 2;
  int gpus = 0;
  for (const JabasServer* s : servers) gpus += s->gpus;
  const int max_workers = static_cast<int>(global_batch / lbs) + 1;
  const int min_running = gpus - alloc_unit;
  std::vector<Entry> table;
  std::vector<int> pair_server;
  for (std::size_t i = 0; i < servers.size(); ++i)
    for (int u = 0; u < servers[i]->gpus / alloc_unit; ++u) {
      const int pair = static_cast<int>(pair_server.size());
      pair_server.push_back(static_cast<int>(i));
      const int n_max = std::max(std::min((max_workers - min_running) / alloc_unit, models[i].max_workers), 1);
      for (int n = 1; n <= n_max; ++n) {
        const int ga_max = std::min(1000, std::max((max_workers - min_running) / alloc_unit / n, 0));
        for (int ga = 0; ga <= ga_max; ++ga)
          table.push_back({models[i].iteration_ms(n, ga + 1) / 1e3, n * (ga + 1), pair, n, ga});
      }
    }
  const std::size_t pairs = pair_server.size();
  std::stable_sort(table.begin(), table.end(), [](const Entry& a, const Entry& b) { return a.workers < b.workers; });
  const auto by_time = [](const Entry& a, const Entry& b) { return a.t_s < b.t_s; };
  std::stable_sort(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(pairs), by_time);
  std::stable_sort(table.begin() + static_cast<std::ptrdiff_t>(pairs), table.end(), by_time);
  std::vector<Entry> a;  // get_pruned_table_by_hash
  std::vector<Entry> seen;
  for (const Entry& e : table) {
    if (e.workers == 1) {
      a.push_back(e);
    } else if (std::none_of(seen.begin(), seen.end(),
                            [&](const Entry& s) { return s.workers == e.workers && s.pair == e.pair; })) {
      seen.push_back(e);
    }
  }
  a.insert(a.end(), seen.begin(), seen.end());

  const auto thp = [lbs, alloc_unit](int workers, double t_s) { return lbs * workers * alloc_unit / t_s; };
  const int rows = total / alloc_unit + 1;
  const int cols = static_cast<int>(a.size());
  std::vector<std::vector<Cell>> dp(static_cast<std::size_t>(cols), std::vector<Cell>(static_cast<std::size_t>(rows)));
  for (int j = 1; j < rows; ++j)
    if (a[0].workers <= j) dp[0][static_cast<std::size_t>(j)] = {thp(a[0].workers, a[0].t_s), a[0].t_s, a[0].workers,
                                                                {{a[0].pair, {a[0].n, a[0].ga}}}};
  int prev_max = 1;
  for (int i = 1; i < cols; ++i) {
    const Entry& e = a[static_cast<std::size_t>(i)];
    auto& row = dp[static_cast<std::size_t>(i)];
    const auto& prev = dp[static_cast<std::size_t>(i - 1)];
    if (e.workers > rows) continue;
    if (i == 1) {
      row[static_cast<std::size_t>(prev_max)] = prev[static_cast<std::size_t>(prev_max)];
      ++prev_max;
    }
    for (int j = 1; j < prev_max; ++j) row[static_cast<std::size_t>(j)] = prev[static_cast<std::size_t>(j)];
    for (int j = prev_max; j < rows; ++j) {
      const Cell& before = prev[static_cast<std::size_t>(j)];
      Cell cur;
      cur.set = before.set;
      cur.set[e.pair] = {e.n, e.ga};
      cur.t_s = std::max(e.t_s, before.t_s);
      cur.workers = set_workers(cur.set);
      cur.thp = thp(cur.workers, cur.t_s);
      if ((cur.thp > before.thp && cur.workers < j) || cur.workers == j) {
        row[static_cast<std::size_t>(j)] = cur;
        if (cur.workers == j) {
          prev_max = cur.workers + 1;
          for (int k = j + 1; k < rows; ++k) row[static_cast<std::size_t>(k)] = cur;
          break;
        }
      } else {
        row[static_cast<std::size_t>(j)] = before;
      }
    }
  }
  ReferenceResult r;
  for (int s = cols; s >= 1; --s) {
    const Cell& c = dp[static_cast<std::size_t>(s - 1)][static_cast<std::size_t>(rows - 1)];
    if (c.workers == rows - 1 && c.set.size() == pairs) {
      if (c.workers * alloc_unit != total) return r;  // configuration_solver.py: odd totals are skipped
      r.feasible = true;
      r.local_batch = lbs;
      r.pairs = c.set;
      r.reported_throughput = c.thp;
      double worst_s = 0;
      for (const auto& [pair, conf] : c.set)
        worst_s = std::max(worst_s, models[static_cast<std::size_t>(pair_server[static_cast<std::size_t>(pair)])]
                                            .iteration_ms(conf.first, conf.second + 1) / 1e3);
      r.throughput = static_cast<double>(global_batch) / worst_s;
      return r;
    }
  }
  return r;
}

}  // namespace reference_detail

// configuration_solver.py for one set of servers: every local batch with B = B_L * total,
// total >= the GPUs; the best throughput JABAS's DP reports.
inline ReferenceResult jabas_reference(const JabasProfile& profile, const std::vector<const JabasServer*>& servers,
                                       std::int64_t global_batch) {
  int gpus = 0;
  for (const JabasServer* s : servers) gpus += s->gpus;
  ReferenceResult best;
  for (int lbs : common_local_batches(servers)) {
    if (global_batch / lbs < gpus) continue;  // AutoScalingConfigurator skips it
    const int total = static_cast<int>(global_batch / lbs);
    if (global_batch != static_cast<std::int64_t>(lbs) * total) continue;
    const ReferenceResult r = reference_detail::solve(server_models(profile, whole_servers(servers), lbs), servers, lbs,
                                                      global_batch, total);
    if (r.feasible && r.reported_throughput > best.reported_throughput) best = r;
  }
  return best;
}

}  // namespace morph::test
