#include "daemon/job_measurements.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "libmorph/record/job_record.h"
#include "libmorph/state/layout.h"
#include "libmorph/util/error.h"
#include "libmorph/util/median.h"

namespace morph::daemon {
namespace {

// The job under one plan, from `from` until the next period begins.
struct Period {
  std::int64_t from = std::numeric_limits<std::int64_t>::min();
  std::optional<ExecutionPlan> plan;  // none: a record morphd cannot read
  std::string gpu_type;               // where it ran; nodes 0: as the request asked (its own
                                      // period, or one spanning GPU types)
  int nodes = 0;
  std::vector<double> iteration_s;    // reported under its layout, in time order
};

// The allocation the job held in `p`: its record's nodes, each on a node of its GPU type in
// `nodes`; none when that is not known (the request's own period, a type `nodes` lacks).
std::optional<policy::JobAllocation> allocation_of(const Period& p, const std::vector<policy::NodeState>& nodes) {
  if (p.nodes <= 0 || !p.plan) return std::nullopt;
  for (std::size_t n = 0; n < nodes.size(); ++n)
    if (nodes[n].gpu.name == p.gpu_type)
      return policy::JobAllocation{
          std::vector<policy::Slice>(static_cast<std::size_t>(p.nodes),
                                     policy::Slice{static_cast<int>(n), p.plan->gpus() / p.nodes, 0, 0}),
          *p.plan};
  return std::nullopt;
}

std::string layout_text(const ExecutionPlan& plan) { return state::to_string(state::layout_of(plan)); }

// How many of `values` a measurement is over: the last `window`; none below `min_observations`.
std::size_t counted(const std::vector<double>& values, const MeasurementOptions& o) {
  if (values.size() < static_cast<std::size_t>(std::max(1, o.min_observations))) return 0;
  return std::min(values.size(), static_cast<std::size_t>(std::max(1, o.window)));
}

// The median of what counts; 0: not measured.
double recent_median(const std::vector<double>& values, const MeasurementOptions& o) {
  const std::size_t n = counted(values, o);
  return n == 0 ? 0 : median({values.end() - static_cast<std::ptrdiff_t>(n), values.end()});
}

std::vector<const store::Observation*> by_time(const std::vector<store::Observation>& observations) {
  std::vector<const store::Observation*> sorted;
  for (const store::Observation& o : observations) sorted.push_back(&o);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->time < b->time; });
  return sorted;
}

// The request first (the plan the job was submitted with), then each plan morphd gave it.
std::vector<Period> periods_of(const policy::JobState& job, const JobHistory& history,
                               const std::vector<const store::Observation*>& observations) {
  std::vector<Period> periods{Period{}};
  periods.front().plan = job.requested_plan;
  for (const store::PlanPeriod& p : history.plans) {
    Period next;
    next.from = p.from_time;
    try {
      const Placement placement = parse_admin_comment(p.record).current;
      next.plan = placement.plan;
      if (!placement.heterogeneous()) {
        next.gpu_type = placement.gpu_type;
        next.nodes = placement.nodes;
      }
    } catch (const Error&) {
      // Its iterations are attributed to nothing.
    }
    periods.push_back(std::move(next));
  }
  std::stable_sort(periods.begin() + 1, periods.end(),
                   [](const Period& a, const Period& b) { return a.from < b.from; });
  std::vector<std::string> layouts;
  for (const Period& p : periods) layouts.push_back(p.plan ? layout_text(*p.plan) : std::string{});
  for (const store::Observation* o : observations) {
    const auto after = std::upper_bound(periods.begin(), periods.end(), o->time,
                                        [](std::int64_t t, const Period& p) { return t < p.from; });
    const auto i = static_cast<std::size_t>(after - periods.begin()) - 1;  // periods[0] begins before any time
    if (periods[i].plan && o->layout == layouts[i]) periods[i].iteration_s.push_back(o->seconds);
  }
  return periods;
}

}  // namespace

JobMeasurement measure_job(const policy::JobState& job, const JobHistory& history,
                           const std::vector<policy::NodeState>& nodes, const MeasurementOptions& options) {
  JobMeasurement m;
  const std::vector<const store::Observation*> observations = by_time(history.observations);
  const std::vector<Period> periods = periods_of(job, history, observations);

  if (job.running()) {
    const auto since = std::max(static_cast<std::int64_t>(std::floor(job.ready_s)), periods.back().from);
    const std::string layout = layout_text(job.current.plan);
    std::vector<double> current;
    for (const store::Observation* o : observations)
      if (o->time >= since && o->layout == layout) current.push_back(o->seconds);
    m.iteration_s = recent_median(current, options);
    m.observations = static_cast<int>(counted(current, options));
  }

  // The promise and the hold: observe_iteration() replayed over the plans the job held.
  policy::JobState replay = job;
  replay.promised_iteration_s = 0;
  replay.held_to_request = false;
  for (const Period& p : periods) {
    const double iteration_s = recent_median(p.iteration_s, options);
    if (!p.plan || iteration_s <= 0) continue;
    // Where the allocation is not known, the request ran as it asked.
    const std::optional<policy::JobAllocation> held = allocation_of(p, nodes);
    replay.current = held ? *held : policy::JobAllocation{{policy::Slice{0, p.plan->gpus(), 0, 0}}, *p.plan};
    policy::observe_iteration(replay, iteration_s, !held || policy::on_requested_nodes(nodes, replay));
  }
  m.promised_iteration_s = replay.promised_iteration_s;
  m.held_to_request = replay.held_to_request;
  return m;
}

void apply_measurement(policy::JobState& job, const JobMeasurement& measurement) {
  job.measured_iteration_s = measurement.iteration_s;
  job.promised_iteration_s = measurement.promised_iteration_s;
  job.held_to_request = measurement.held_to_request;
}

}  // namespace morph::daemon
