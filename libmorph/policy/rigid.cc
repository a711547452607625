#include "libmorph/policy/rigid.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "libmorph/policy/job_length.h"

namespace morph::policy {

std::vector<int> rigid_types(const Assignment& a, PlanOracle& oracle, std::size_t job) {
  const ClusterView& v = a.view();
  const JobState& j = v.jobs[job];
  const int gpus = j.requested_plan.gpus();
  std::vector<int> capacity(static_cast<std::size_t>(a.pool().types()), 0);  // in its partitions
  for (std::size_t n = 0; n < v.nodes.size(); ++n)
    if (j.nodes_allowed.empty() || j.nodes_allowed[n])
      capacity[static_cast<std::size_t>(a.pool().type_of(static_cast<int>(n)))] += v.nodes[n].type.gpus;
  std::vector<int> types;
  for (int type : a.pool().types_by_memory()) {
    if (capacity[static_cast<std::size_t>(type)] < gpus) continue;
    const Shape shape = packed_shape(v.nodes, a.pool().any_node_of(type), gpus);
    if (oracle.best(j, PlanFreedom::exact, v.nodes, shape).feasible) types.push_back(type);
  }
  return types;
}

double rigid_time_left(const Assignment& a, PlanOracle& oracle, std::size_t job) {
  const ClusterView& v = a.view();
  const JobState& j = v.jobs[job];
  const JobAllocation& t = a.target(job);
  double iteration_s;
  double restart;
  if (j.running() && t == j.current) {
    iteration_s = oracle.current_s(j, v.nodes);
    restart = std::max(0.0, j.ready_s - v.now_s);
  } else {
    iteration_s = oracle.predict_s(j, t.plan, v.nodes, t.slices);
    restart = v.restart.of(change_path(j, v.nodes, t.slices, t.plan, oracle));
  }
  return restart + expected_remaining_iterations(j, v, oracle) * iteration_s;
}

std::vector<Decision> backfill_round(const ClusterView& view, PlanOracle& oracle, const BackfillOptions& options) {
  Assignment a(view, oracle, PlanFreedom::exact, options.cpus);
  std::vector<std::size_t> waiting;
  for (std::size_t i = 0; i < view.jobs.size(); ++i)
    if (view.jobs[i].running())
      a.hold(i);
    else
      waiting.push_back(i);
  std::stable_sort(waiting.begin(), waiting.end(), [&](std::size_t x, std::size_t y) {
    return view.jobs[x].submit_time_s < view.jobs[y].submit_time_s;
  });

  int reserved_type = -1;
  std::vector<bool> reserved_nodes;  // the nodes of its type the reserved job may run on (its partitions')
  double shadow_s = 0;  // when the reserved job can start, seconds from now
  int extra = 0;        // GPUs of those nodes still spare at that time
  bool reserved_overdue = false;
  // A job's GPUs on the reserved job's nodes.
  auto on_reserved = [&](std::size_t k) {
    int gpus = 0;
    for (const Slice& s : a.target(k).slices)
      if (reserved_nodes[static_cast<std::size_t>(s.node)]) gpus += s.gpus;
    return gpus;
  };
  for (std::size_t i : waiting) {
    const std::vector<int> types = rigid_types(a, oracle, i);
    if (types.empty()) continue;  // can never run here; it does not block the queue
    const int gpus = view.jobs[i].requested_plan.gpus();
    // Off the reserved type, any type with room now; on it, only as a backfill (below).
    if (std::any_of(types.begin(), types.end(),
                    [&](int type) { return type != reserved_type && a.start(i, type, gpus); }))
      continue;
    const bool reserved_fits = std::find(types.begin(), types.end(), reserved_type) != types.end();
    if (reserved_type >= 0 && !reserved_fits) continue;
    const int type = reserved_type >= 0 ? reserved_type : types.front();
    if (reserved_type < 0) {
      // The first job that does not fit: reserve for it when enough GPUs free up.
      const std::vector<bool>& allowed = view.jobs[i].nodes_allowed;
      reserved_nodes.assign(view.nodes.size(), false);
      int free = 0;
      for (std::size_t n = 0; n < view.nodes.size(); ++n) {
        reserved_nodes[n] = a.pool().type_of(static_cast<int>(n)) == type && (allowed.empty() || allowed[n]);
        if (reserved_nodes[n]) free += a.pool().free_gpus(static_cast<int>(n));
      }
      std::vector<std::pair<double, int>> ends;
      for (std::size_t k = 0; k < view.jobs.size(); ++k)
        if (a.placed(k))
          if (const int freed = on_reserved(k); freed > 0) ends.emplace_back(rigid_time_left(a, oracle, k), freed);
      std::sort(ends.begin(), ends.end());
      shadow_s = std::numeric_limits<double>::infinity();
      for (const auto& [end, g] : ends) {
        free += g;
        if (free >= gpus) {
          shadow_s = end;
          extra = free - gpus;
          break;
        }
      }
      reserved_type = type;
      reserved_overdue = overdue(view.jobs[i], view);
      continue;
    }
    // Backfill on the reserved type: off the reserved job's nodes, finish before the
    // reservation, or use spare GPUs. Behind an overdue job only on spare GPUs: end times
    // are estimates, and a job that runs longer than estimated would delay the
    // reservation (anti-starvation).
    if (!a.start(i, type, gpus)) continue;
    const int taken = on_reserved(i);
    if (taken == 0) continue;
    if (!reserved_overdue && rigid_time_left(a, oracle, i) <= shadow_s) continue;
    if (taken <= extra) {
      extra -= taken;
      continue;
    }
    a.release(i);
    // Elsewhere, where its partitions let it run and the reserved job's do not.
    const std::vector<bool>& allowed = view.jobs[i].nodes_allowed;
    std::vector<bool> off(view.nodes.size());
    for (std::size_t n = 0; n < off.size(); ++n) off[n] = !reserved_nodes[n] && (allowed.empty() || allowed[n]);
    if (std::vector<Slice> slices = a.pool().place(type, gpus, &off); !slices.empty()) a.start_on(i, std::move(slices));
  }
  if (options.spare_cpus) a.grant_spare_cpus();
  return a.decisions();
}

bool rigid_steady(const ClusterView& view, PlanOracle& oracle) {
  const Assignment a(view, oracle, PlanFreedom::exact, CpuRule::requested);
  for (std::size_t i = 0; i < view.jobs.size(); ++i)
    if (!view.jobs[i].running() && !rigid_types(a, oracle, i).empty()) return false;
  return true;
}

}  // namespace morph::policy
