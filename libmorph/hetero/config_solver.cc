#include "libmorph/hetero/config_solver.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace morph {
namespace {

using Reach = std::vector<std::uint8_t>;  // [s]: some choice of the GPUs so far sums to s workers

double time_ms(const GpuKindTimes& kind, int n, int extra_steps) {
  return kind.fixed_ms[static_cast<std::size_t>(n - 1)] + kind.step_ms[static_cast<std::size_t>(n - 1)] * extra_steps;
}

// For each n: how many of the worker counts n, 2n, .., (M / n) n a GPU of this kind runs
// within `limit_ms` (the time is increasing in n_GA).
std::vector<int> progression_lengths(const GpuKindTimes& kind, double limit_ms, int m) {
  std::vector<int> k(kind.fixed_ms.size(), 0);
  for (int n = 1; n <= static_cast<int>(kind.fixed_ms.size()) && n <= m; ++n) {
    const int cap = m / n;
    const double step = kind.step_ms[static_cast<std::size_t>(n - 1)];
    if (time_ms(kind, n, 0) > limit_ms) continue;
    int steps = static_cast<int>(std::min<double>(cap - 1, std::floor((limit_ms - time_ms(kind, n, 0)) / step)));
    // The candidate times are computed by time_ms(): settle rounding the same way.
    while (steps + 1 < cap && time_ms(kind, n, steps + 1) <= limit_ms) ++steps;
    while (steps >= 0 && time_ms(kind, n, steps) > limit_ms) --steps;
    k[static_cast<std::size_t>(n - 1)] = steps + 1;
  }
  return k;
}

// next[s] = OR over n, j in 1..k_n of prev[s - j n]: one sliding window per residue class.
void add_gpu(const Reach& prev, Reach& next, const std::vector<int>& k, int m) {
  std::fill(next.begin(), next.end(), 0);
  for (int n = 1; n <= static_cast<int>(k.size()); ++n) {
    const int kn = k[static_cast<std::size_t>(n - 1)];
    if (kn == 0) continue;
    for (int r = 0; r < n; ++r) {
      int in_window = 0;
      for (int s = r; s <= m; s += n) {
        if (s - n >= 0) in_window += prev[static_cast<std::size_t>(s - n)];
        if (s - (kn + 1) * n >= 0) in_window -= prev[static_cast<std::size_t>(s - (kn + 1) * n)];
        if (in_window > 0) next[static_cast<std::size_t>(s)] = 1;
      }
    }
  }
}

class SplitSearch {
 public:
  SplitSearch(const std::vector<GpuKindTimes>& kinds, int m) : kinds_(kinds), m_(m) {
    for (std::size_t i = 0; i < kinds.size(); ++i)
      for (int c = 0; c < kinds[i].count; ++c) gpu_kind_.push_back(i);
  }

  int gpu_count() const { return static_cast<int>(gpu_kind_.size()); }

  // Whether the GPUs can hold exactly M workers, each within `limit_ms`; with `keep`, the
  // reach after every GPU stays for reconstruct().
  bool feasible(double limit_ms, bool keep) {
    lengths_.clear();
    for (const GpuKindTimes& kind : kinds_) {
      lengths_.push_back(progression_lengths(kind, limit_ms, m_));
      if (kind.count > 0 && std::all_of(lengths_.back().begin(), lengths_.back().end(), [](int k) { return k == 0; }))
        return false;
    }
    Reach prev(static_cast<std::size_t>(m_) + 1, 0), next(prev.size(), 0);
    prev[0] = 1;
    reach_.clear();
    if (keep) reach_.push_back(prev);
    for (std::size_t kind : gpu_kind_) {
      add_gpu(prev, next, lengths_[kind], m_);
      std::swap(prev, next);
      if (keep) reach_.push_back(prev);
    }
    return prev[static_cast<std::size_t>(m_)] != 0;
  }

  // Walks back from M through the kept reach, giving each GPU its fastest fitting choice.
  WorkerSplit reconstruct() const {
    WorkerSplit split;
    split.iter_ms = 0;
    int s = m_;
    for (int g = gpu_count(); g-- > 0;) {
      const std::size_t kind = gpu_kind_[static_cast<std::size_t>(g)];
      const Reach& before = reach_[static_cast<std::size_t>(g)];
      GpuWorkers best;
      best.kind = static_cast<int>(kind);
      best.iter_ms = std::numeric_limits<double>::infinity();
      const std::vector<int>& k = lengths_[kind];
      for (int n = 1; n <= static_cast<int>(k.size()); ++n)
        for (int j = 1; j <= k[static_cast<std::size_t>(n - 1)] && j * n <= s; ++j) {
          const double t = time_ms(kinds_[kind], n, j - 1);
          if (before[static_cast<std::size_t>(s - j * n)] != 0 && t < best.iter_ms) {
            best.workers = n;
            best.ga_steps = j;
            best.iter_ms = t;
          }
        }
      s -= best.workers * best.ga_steps;
      split.iter_ms = std::max(split.iter_ms, best.iter_ms);
      split.gpus.push_back(best);
    }
    std::reverse(split.gpus.begin(), split.gpus.end());
    return split;
  }

 private:
  const std::vector<GpuKindTimes>& kinds_;
  int m_;
  std::vector<std::size_t> gpu_kind_;
  std::vector<std::vector<int>> lengths_;
  std::vector<Reach> reach_;
};

}  // namespace

WorkerSplit solve_worker_split(const std::vector<GpuKindTimes>& kinds, int workers) {
  SplitSearch search(kinds, workers);
  if (search.gpu_count() == 0 || workers < search.gpu_count()) return {};
  // Every GPU runs at least one worker: the bottleneck is no less than each kind's fastest.
  double lower_ms = 0;
  for (const GpuKindTimes& kind : kinds)
    if (kind.count > 0) lower_ms = std::max(lower_ms, *std::min_element(kind.fixed_ms.begin(), kind.fixed_ms.end()));
  std::vector<double> candidates;
  for (const GpuKindTimes& kind : kinds) {
    if (kind.count == 0) continue;
    for (int n = 1; n <= static_cast<int>(kind.fixed_ms.size()) && n <= workers; ++n)
      for (int extra = 0; extra < workers / n; ++extra)
        if (const double t = time_ms(kind, n, extra); t >= lower_ms) candidates.push_back(t);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (candidates.empty() || !search.feasible(candidates.back(), false)) return {};
  std::size_t lo = 0, hi = candidates.size() - 1;  // candidates[hi] is feasible
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (search.feasible(candidates[mid], false)) hi = mid;
    else lo = mid + 1;
  }
  search.feasible(candidates[hi], true);
  return search.reconstruct();
}

}  // namespace morph
