#include "libmorph/planner/sensitivity.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

CurvePoint evaluate(const Workload& w, const Allocation& a, const PerfModel& perf,
                    const PlanSearchOptions& options, double previous_envelope) {
  CurvePoint point;
  point.gpus = a.gpus();
  point.cpus = a.cpus();
  point.allocation = a.to_string();
  PlanSearch search = search_plans(w, a, perf, options);
  if (!search.feasible.empty()) {
    point.feasible = true;
    point.best = std::move(search.feasible.front());
    point.throughput = point.best.throughput;
  }
  point.envelope = std::max(previous_envelope, point.throughput);
  return point;
}

}  // namespace

Allocation packed_allocation(const Cluster& cluster, const NodeType& node, int gpus, int cpus_per_gpu) {
  if (gpus < 1 || node.gpus < 1) throw Error(fmt::format("cannot pack {} GPUs on {} nodes", gpus, node.name));
  Allocation a = uniform_allocation(cluster, node, gpus / node.gpus, node.gpus, cpus_per_gpu);
  if (gpus % node.gpus != 0) {
    Allocation rest = uniform_allocation(cluster, node, 1, gpus % node.gpus, cpus_per_gpu);
    a.nodes.push_back(rest.nodes.front());
  }
  return a;
}

std::vector<CurvePoint> gpu_curve(const Workload& w, const Cluster& cluster, const NodeType& node,
                                  int max_gpus, const PerfModel& perf, const PlanSearchOptions& options) {
  std::vector<CurvePoint> curve;
  double envelope = 0;
  for (int g = 1; g <= max_gpus; ++g) {
    curve.push_back(evaluate(w, packed_allocation(cluster, node, g, 0), perf, options, envelope));
    envelope = curve.back().envelope;
  }
  return curve;
}

std::vector<CurvePoint> cpu_curve(const Workload& w, const Cluster& cluster, const NodeType& node, int gpus,
                                  int max_cpus_per_gpu, const PerfModel& perf,
                                  const PlanSearchOptions& options) {
  std::vector<CurvePoint> curve;
  double envelope = 0;
  for (int c = 1; c <= max_cpus_per_gpu; ++c) {
    curve.push_back(evaluate(w, packed_allocation(cluster, node, gpus, c), perf, options, envelope));
    envelope = curve.back().envelope;
  }
  return curve;
}

}  // namespace morph
