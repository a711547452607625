#include "libmorph/perf/informative_points.h"

#include <cmath>

#include "libmorph/util/error.h"

namespace morph {

Eigen::VectorXd log_sensitivity(const IterationTerms& terms, const PerfParams& at) {
  constexpr double kStep = 1e-4;  // in log(k + floor)
  const auto& info = perf_param_info();
  std::array<double, PerfParams::kCount> k = at.to_array();
  const double base = std::log(combine(terms, k.data()).iter_ms);
  Eigen::VectorXd g(static_cast<Eigen::Index>(PerfParams::kCount));
  for (std::size_t i = 0; i < PerfParams::kCount; ++i) {
    const double value = k[i];
    const double floor = prior_floor(i);
    // Forward, or backward from the upper bound.
    const double step = (value + floor) * std::exp(kStep) - floor <= info[i].upper ? kStep : -kStep;
    k[i] = (value + floor) * std::exp(step) - floor;
    g[static_cast<Eigen::Index>(i)] = (std::log(combine(terms, k.data()).iter_ms) - base) / step;
    k[i] = value;
  }
  return g;
}

std::vector<std::size_t> most_informative(std::span<const IterationTerms> fitted,
                                          std::span<const IterationTerms> candidates,
                                          const std::vector<bool>& eligible, const PerfParams& at,
                                          double prior_weight, int k) {
  if (!(prior_weight > 0)) throw Error("most_informative: the prior weight must be positive");
  if (eligible.size() != candidates.size()) throw Error("most_informative: one eligibility per candidate");
  const auto n = static_cast<Eigen::Index>(PerfParams::kCount);
  Eigen::MatrixXd information = prior_weight * prior_weight * Eigen::MatrixXd::Identity(n, n);
  for (const IterationTerms& x : fitted) {
    const Eigen::VectorXd g = log_sensitivity(x, at);
    information += g * g.transpose();
  }
  std::vector<Eigen::VectorXd> g(candidates.size());
  std::vector<bool> usable = eligible;  // a non-finite sensitivity would poison every later pick
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (usable[i]) {
      g[i] = log_sensitivity(candidates[i], at);
      usable[i] = g[i].allFinite();
    }
  std::vector<bool> taken(candidates.size(), false);
  std::vector<std::size_t> chosen;
  for (int round = 0; round < k; ++round) {
    const Eigen::LDLT<Eigen::MatrixXd> solver(information);
    std::size_t best = candidates.size();
    double most = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (!usable[i] || taken[i]) continue;
      const double variance = g[i].dot(solver.solve(g[i]));
      if (best == candidates.size() || variance > most * (1 + 1e-9)) {
        most = variance;
        best = i;
      }
    }
    if (best == candidates.size()) break;
    taken[best] = true;
    chosen.push_back(best);
    information += g[best] * g[best].transpose();
  }
  return chosen;
}

}  // namespace morph
