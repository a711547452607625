#include "libmorph/perf/fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <ceres/ceres.h>
#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

constexpr std::size_t kN = PerfParams::kCount;
// Log residuals beyond about 15% count less than quadratically (soft L1), so that one
// inconsistent measurement does not bend every prediction.
constexpr double kRobustScale = 0.15;
// Iterations of each start before all but the best are dropped.
constexpr int kRaceIterations = 50;
// Derivatives per pass of the point residuals' automatic differentiation: Jets of 8
// vectorise, one of all 17 parameters does not (docs/benchmarks.md: 6.2 against 10.8 ms a fit).
constexpr int kJetStride = 8;

// log(model / measured), the model's part floored at a picosecond: a part a parameter at
// its bound takes to 0 (k_opt = 0 on a plan without ZeRO) gave log(0), and Ceres logged
// each such evaluation (a thousand lines a fit).
template <typename T>
T log_ratio(const T& model_ms, double measured_ms) {
  constexpr double kFloorMs = 1e-9;
  return log((model_ms > T(kFloorMs) ? model_ms : T(kFloorMs)) / measured_ms);
}

// Log residuals of one point; one parameter block per k so that uninformed ones can be
// held constant.
struct PointResidual {
  const MeasuredPoint* point;
  template <typename T>
  bool operator()(T const* const* blocks, T* residual) const {
    T k[kN];
    for (std::size_t i = 0; i < kN; ++i) k[i] = blocks[i][0];
    const IterationTime<T> t = combine(point->terms, k);
    int i = 0;
    residual[i++] = log_ratio(t.iter_ms, point->iter_ms);
    if (point->backward_sync_ms > 0) residual[i++] = log_ratio(T(t.cc_ms - t.forward_ms), point->backward_sync_ms);
    if (point->optimizer_ms > 0) residual[i++] = log_ratio(t.oo_ms, point->optimizer_ms);
    return true;
  }
  int count() const { return 1 + (point->backward_sync_ms > 0) + (point->optimizer_ms > 0); }
};

// Online refit: prior_weight * log((k + f) / (k_start + f)) per parameter but k_odd, with
// the floor f of prior_floor() so that a parameter may reach zero. The odd-placement stall
// (docs/models.md, "Odd placements") has no prior: its default, 0, is no belief about a
// model, and it is fitted only where the points tell it from k_net. A pipeline stage's
// cost per pass ("Pipelines") keeps its prior: 0 by default too, but two or three
// pipeline rows do not tell it from k_pipe and k_fwd_mp.
struct PriorResidual {
  double start;
  double floor;
  double weight;
  template <typename T>
  bool operator()(const T* k, T* residual) const {
    residual[0] = T(weight) * log((k[0] + T(floor)) / T(start + floor));
    return true;
  }
};

std::array<bool, kN> informed(std::span<const MeasuredPoint> points) {
  std::array<bool, kN> used{};
  bool odd = false, even = false;
  used[param::kBwd] = used[param::kConst] = true;
  for (const MeasuredPoint& p : points) {
    const IterationTerms& x = p.terms;
    if (x.dp_ms > 0 && !x.offload) used[param::kSync] = true;
    if (x.dp_ms > 0 && !x.dp_net) used[param::kDp] = true;
    if (x.tp_ms > 0 || x.pp_ms > 0) used[param::kMp] = true;
    if ((x.dp_ms > 0 && x.dp_net) || (x.tp_ms > 0 && x.tp_net) || (x.pp_ms > 0 && x.pp_net))
      used[param::kNet] = true;
    if (x.unpipelined_forward_ms != x.forward_ms) used[param::kPipe] = true;
    if (x.model_parallel) used[param::kFwdMp] = true;
    if (x.stage_passes > 0) used[param::kStage] = true;
    odd = odd || x.odd_ring > 0;
    even = even || (x.dp_ms > 0 && x.dp_net && !x.offload && !(x.odd_ring > 0));
    if (x.offload) {
      for (param::Index i :
           {param::kOptOff, param::kOff, param::kSwap, param::kPcie, param::kOptModel, param::kConstOff})
        used[i] = true;
    } else if (x.opt_mparams > 0) {
      used[param::kOpt] = true;
    }
  }
  // The odd-placement stall is told apart from k_net only beside a data-parallel group
  // across nodes that synchronises on the GPUs without one.
  used[param::kOdd] = odd && even;
  return used;
}

struct Solved {
  std::array<double, kN> k;
  double cost = std::numeric_limits<double>::infinity();
  bool converged = false;
};

Solved solve_from(std::span<const MeasuredPoint> points, const std::array<bool, kN>& used,
                  std::array<double, kN> k, const std::array<double, kN>& prior, const FitOptions& options,
                  int iterations) {
  ceres::Problem problem;
  if (options.prior_weight > 0)
    for (std::size_t i = 0; i < kN; ++i) {
      if (i == param::kOdd) continue;
      problem.AddResidualBlock(new ceres::AutoDiffCostFunction<PriorResidual, 1, 1>(
                                   new PriorResidual{prior[i], prior_floor(i), options.prior_weight}),
                               nullptr, &k[i]);
    }
  for (const MeasuredPoint& p : points) {
    auto* functor = new PointResidual{&p};
    const int residuals = functor->count();
    auto* cost = new ceres::DynamicAutoDiffCostFunction<PointResidual, kJetStride>(functor);
    std::vector<double*> blocks;
    for (std::size_t i = 0; i < kN; ++i) {
      cost->AddParameterBlock(1);
      blocks.push_back(&k[i]);
    }
    cost->SetNumResiduals(residuals);
    problem.AddResidualBlock(cost, new ceres::SoftLOneLoss(kRobustScale), blocks);
  }
  const auto& info = perf_param_info();
  for (std::size_t i = 0; i < kN; ++i) {
    problem.SetParameterLowerBound(&k[i], 0, info[i].lower);
    problem.SetParameterUpperBound(&k[i], 0, info[i].upper);
    if (!used[i]) problem.SetParameterBlockConstant(&k[i]);
  }
  ceres::Solver::Options so;
  so.max_num_iterations = iterations;
  so.linear_solver_type = ceres::DENSE_QR;
  so.logging_type = ceres::SILENT;
  so.num_threads = 1;
  so.function_tolerance = 1e-10;
  so.parameter_tolerance = 1e-10;
  ceres::Solver::Summary summary;
  ceres::Solve(so, &problem, &summary);
  Solved s;
  s.k = k;
  if (summary.IsSolutionUsable() && std::isfinite(summary.final_cost)) {
    s.cost = summary.final_cost;
    s.converged = summary.termination_type == ceres::CONVERGENCE;
  }
  return s;
}

}  // namespace

FitResult fit_perf_params(std::span<const MeasuredPoint> points, const FitOptions& options,
                          const PerfParams& start) {
  if (points.empty()) throw Error("fit: no measured points");
  if (options.max_iterations < 0)
    throw Error(fmt::format("fit: max_iterations {} is negative", options.max_iterations));
  if (!(options.prior_weight >= 0) || !std::isfinite(options.prior_weight))
    throw Error(fmt::format("fit: prior_weight {} is not a finite weight >= 0", options.prior_weight));
  for (const MeasuredPoint& p : points) {
    if (!(p.iter_ms > 0) || !std::isfinite(p.iter_ms))
      throw Error(fmt::format("fit: point {} has a non-positive iteration time", p.label));
    if (!(p.terms.forward_ms > 0))
      throw Error(fmt::format("fit: point {} has no forward time", p.label));
    // The measured parts: 0 when not measured (a NaN, a negative or an infinite one was
    // dropped, or failed the solver with its generic message).
    for (const auto& [part, ms] : {std::pair{"backward and synchronisation", p.backward_sync_ms},
                                   std::pair{"optimizer", p.optimizer_ms}})
      if (!(ms >= 0) || !std::isfinite(ms))
        throw Error(fmt::format("fit: point {}: its {} time is {} ms", p.label, part, ms));
  }
  auto used = informed(points);
  if (options.prior_weight > 0) {
    const bool odd = used[param::kOdd];  // has no prior
    used.fill(true);
    used[param::kOdd] = odd;
  }
  const auto& info = perf_param_info();

  // The overlap exponents make the problem non-convex (a start with too little overlap
  // settles with k_const at its bound): restart with the three exponents at little,
  // some and much overlap, keeping the other parameters.
  static constexpr double kExponentStarts[] = {1.2, 3.0, 8.0};
  static constexpr std::size_t kExponents[] = {param::kSync, param::kOff, param::kSwap};
  std::vector<std::array<double, kN>> starts{start.to_array()};
  for (int s = 0; s < options.extra_starts; ++s) {
    std::array<double, kN> k = start.to_array();
    for (std::size_t i : kExponents)
      if (used[i]) k[i] = std::clamp(kExponentStarts[s % 3] * (1 + s / 3), info[i].lower, info[i].upper);
    starts.push_back(k);
  }
  // Every start runs a short race; only the best goes on to convergence, so that starts
  // creeping along a flat exponent do not spend the whole budget.
  const int race = std::min(options.max_iterations, kRaceIterations);
  const auto prior = options.prior_centre.value_or(start).to_array();
  Solved best;
  for (const auto& k : starts) {
    Solved s = solve_from(points, used, k, prior, options, race);
    if (s.cost < best.cost) best = s;
  }
  if (std::isfinite(best.cost) && !best.converged && options.max_iterations > race) {
    Solved s = solve_from(points, used, best.k, prior, options, options.max_iterations - race);
    if (s.cost <= best.cost) best = s;
  }
  if (!std::isfinite(best.cost)) throw Error("fit: the solver found no usable solution");

  FitResult result;
  result.params = PerfParams::from_array(best.k.data());
  result.converged = best.converged;
  result.fitted.assign(used.begin(), used.end());
  std::size_t residuals = 0;
  double squares = 0;
  std::vector<const double*> blocks;
  for (const double& k : best.k) blocks.push_back(&k);
  for (const MeasuredPoint& p : points) {
    const PointResidual residual{&p};
    double r[3];
    residual(blocks.data(), r);
    for (int i = 0; i < residual.count(); ++i) squares += r[i] * r[i];
    residuals += static_cast<std::size_t>(residual.count());
    const double predicted = predict_iteration(p.terms, result.params).iter_ms;
    result.rel_errors.push_back((predicted - p.iter_ms) / p.iter_ms);
  }
  result.rmsle = std::sqrt(squares / static_cast<double>(residuals));
  result.residuals = residuals;
  return result;
}

}  // namespace morph
