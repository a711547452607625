#include "libmorph/policy/elastic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>

#include "libmorph/policy/assignment.h"
#include "libmorph/policy/free_cells.h"
#include "libmorph/policy/job_length.h"

namespace morph::policy {
namespace {

constexpr double kNoGain = 1e-15;

struct Item {
  std::size_t job = 0;
  int type = -1;  // GPU type of the tentative allocation; -1: none
  int gpus = 0;   // tentative GPU count
  int current_type = -1;
  int current_gpus = 0;
  double current_rate = 0;  // iterations/s where the job runs now
  double ready_left = 0;    // seconds of its (re)start still to go
  double remaining = 0;     // iterations
  bool guaranteed = false;
  bool overdue = false;  // waited past the starvation limit: it has a minimum, its smallest configuration
  PlanFreedom freedom = PlanFreedom::any;
  bool resize = true;
  bool settling = false;  // reconfigured less than ClusterView::payback_s ago: it may not grow
  // Restarted n times, it has run less than n payback_s since the last: only a guaranteed
  // minimum or an overdue job may shrink it (restart backoff, docs/policy.md item 4).
  bool backing_off = false;
  std::vector<const JobCurve*> curves;  // per GPU type, filled on first use
  std::vector<int> min;                 // per GPU type, -1: not computed
  double smallest_rate = -1;            // Sia's normaliser (Round::smallest_rate); -1: not computed
  int version = 0;                      // bumped on every change; stale heap entries are skipped
  // JABAS (ClusterView::heterogeneous_jobs): the GPUs of a second type the job spans as
  // one data-parallel job, and those it spans now (-1: none). Pass 1 sees only its first
  // type; spill_to_other_types() decides the second.
  int extra_type = -1;
  int extra_gpus = 0;
  int current_extra_type = -1;
  int current_extra_gpus = 0;
  bool runs_in_cells = false;  // Round::current_held() says where it runs
  bool changed_type = false;   // moved to another GPU type by move_to_other_types()

  bool spans_types_now() const { return current_extra_type >= 0; }
};

struct Victim {
  double slope;  // what shrinking it by one step loses, per GPU
  std::size_t item;
  int version;
  bool operator>(const Victim& o) const { return slope > o.slope || (slope == o.slope && item > o.item); }
};

class Round {
 public:
  Round(const ClusterView& view, PlanOracle& oracle, const ElasticOptions& options)
      : view_(view),
        oracle_(oracle),
        options_(options),
        assignment_(view, oracle, PlanFreedom::any, CpuRule::share),
        cells_(view, assignment_.pool()) {}

  std::vector<Decision> run();
  bool steady();

 private:
  const NodePool& pool() const { return assignment_.pool(); }
  const JobCurve& curve(Item& it, int type);
  int min_gpus(Item& it, int type);
  double value(Item& it, int type, int gpus);
  double completion_value(const Item& it, double rate, double restart) const;
  double smallest_rate(Item& it);
  std::vector<int> admission_types(Item& it);
  ChangePath path_to(const Item& it, int type, int gpus, const ExecutionPlan* plan = nullptr) const;
  int shrink_target(Item& it);
  bool shrinks_where_it_runs(const Item& it, int gpus) const;
  void push_victim(std::size_t i);
  bool pop_victim(int type, std::size_t requester, bool for_minimum, Victim* out);
  // Where a job's tentative GPUs are, per cell (FreeCells), and where it runs.
  std::size_t at(std::size_t i, int cell) const {
    return i * static_cast<std::size_t>(cells_.cells()) + static_cast<std::size_t>(cell);
  }
  int& held(std::size_t i, int cell) { return held_[at(i, cell)]; }
  int held(std::size_t i, int cell) const { return held_[at(i, cell)]; }
  int current_held(std::size_t i, int cell) const { return current_held_[at(i, cell)]; }
  bool unchanged(const Item& it) const;
  bool left_its_cells(const Item& it) const;
  bool on_held_cells(const Item& it, const std::vector<Slice>& slices) const;
  void set(std::size_t i, int type, int gpus);
  void transfer(std::size_t i, int cell, int gpus);
  int free_for(const Item& it, int type) const;
  int take_free(std::size_t i, int type, int gpus);
  std::vector<int> kept_cells(std::size_t i) const;
  int kept_gpus(std::size_t i) const;
  void leave_kept(std::size_t i);
  void release(std::size_t victim, int type, int gpus, std::size_t requester);
  bool holds_for(std::size_t victim, int type, std::size_t requester) const;
  void rollback(std::size_t mark);
  bool grow(std::size_t i, int type, bool to_min_only);
  double first_gain(Item& it, int type);
  void init();
  void configure(Item& it, const JobState& job);
  void release_request(Item& it);
  bool within_quota(const std::map<std::string, long>& used, const JobState& job, int gpus) const;
  std::vector<std::pair<std::size_t, bool>> running_within_quota(std::map<std::string, long>& used);
  void schedule_minimums();
  void schedule_by_slope();
  bool movable(const Item& it) const;
  void move_to_other_types();
  void spill_to_other_types();
  void hold_or_replan(const Item& it);
  bool runs_request_spread(const Item& it) const;
  void repack(const Item& it);
  std::vector<int> repack_types(const Item& it) const;
  bool start_down_curve(Item& it);
  bool learns_promise_spread(const Item& it) const;
  bool defragment(Item& it, std::vector<std::size_t>& held);
  std::vector<Decision> place();

  const ClusterView& view_;
  PlanOracle& oracle_;
  ElasticOptions options_;
  Assignment assignment_;
  FreeCells cells_;
  std::vector<Item> items_;
  std::vector<int> free_;  // per cell: GPUs no tentative allocation holds
  std::vector<int> held_, current_held_;  // per job and cell
  std::vector<std::size_t> nodes_allowed_;  // per job: how many nodes it may run on
  std::vector<std::priority_queue<Victim, std::vector<Victim>, std::greater<>>> victims_;  // per GPU type
  struct Undo {
    std::size_t item;
    int cell;  // -1: the item's type and count were `type` and `gpus`; else it took `gpus` of the cell's
    int type;
    int gpus;
  };
  std::vector<Undo> undo_;
};

const JobCurve& Round::curve(Item& it, int type) {
  const JobCurve*& c = it.curves[static_cast<std::size_t>(type)];
  if (!c) c = &oracle_.curve(view_.jobs[it.job], it.freedom, it.resize, view_.nodes, pool().any_node_of(type));
  return *c;
}

// A job's minimum demand on `type`: Morphling's for a guaranteed job, the smallest
// configuration under Sia and for an overdue job (anti-starvation), else 0.
int Round::min_gpus(Item& it, int type) {
  int& m = it.min[static_cast<std::size_t>(type)];
  if (m >= 0) return m;
  if (it.guaranteed && !options_.admit_at_minimum) {
    m = oracle_.min_gpus(view_.jobs[it.job], it.freedom, it.resize, view_.nodes, pool().any_node_of(type));
  } else if (options_.admit_at_minimum || it.overdue) {
    const JobCurve& c = curve(it, type);
    m = c.useful.empty() ? 0 : c.useful.front();
  } else {
    m = 0;
  }
  return m;
}

// The path a change to `plan` on `gpus` GPUs of `type` will most likely take, before
// placement decides the nodes: fewer GPUs on the same type, in whole nodes' worth of its
// current GPUs per node, can be a shrink; as many, a new plan in place; either a requeue
// where the plan needs more host memory per node (as change_path() has it). Without
// `plan`, the plan of the job's curve there: placement may choose another (its nodes,
// AllocMem), which the simulator then charges.
ChangePath Round::path_to(const Item& it, int type, int gpus, const ExecutionPlan* plan) const {
  const JobState& j = view_.jobs[it.job];
  if (!j.running()) return start_path(j);
  if (j.record_locked || it.spans_types_now()) return ChangePath::requeue;
  const NodeShape from = node_shape(view_.nodes, j.current.slices);
  if (type != it.current_type || !from.uniform || left_its_cells(it)) return ChangePath::requeue;
  ChangePath path = ChangePath::requeue;
  if (gpus == it.current_gpus) path = ChangePath::inplace;
  else if (gpus < it.current_gpus && gpus % from.gpus_per_node == 0) path = ChangePath::shrink;
  if (path == ChangePath::requeue) return path;
  if (plan == nullptr) {
    const Shape packed = packed_shape(view_.nodes, pool().any_node_of(type), gpus);  // as curve() has it
    const PlanChoice& best = oracle_.best(j, it.freedom, view_.nodes, packed);
    if (!best.feasible) return path;  // no plan: nothing to weigh there
    plan = &best.plan;
  }
  return within_host_memory(path, j, *plan, oracle_);
}

// What `gpus` GPUs of `type` are worth to the job under the objective (0 without GPUs).
double Round::value(Item& it, int type, int gpus) {
  if (gpus <= 0) return 0;
  const bool unchanged = type == it.current_type && gpus == it.current_gpus && !it.spans_types_now() &&
                         it.current_rate > 0 && !left_its_cells(it);
  const double rate = unchanged ? it.current_rate : curve(it, type).at(gpus);
  if (rate <= 0) return 0;
  const double restart = unchanged ? it.ready_left : view_.restart.of(path_to(it, type, gpus));
  if (options_.objective == Objective::completion_rate) return completion_value(it, rate, restart);
  const double left = it.remaining / rate;  // seconds of work left at this rate
  const double smallest = smallest_rate(it);
  return rate / (smallest > 0 ? smallest : rate) * left / (left + restart);
}

// Sia normalises a job's goodput by its least over every configuration it may run (the
// row minimum of its goodput matrix): its smallest GPU count on its slowest GPU type, so
// that a faster type is worth more to it. 0 when it may run nowhere.
double Round::smallest_rate(Item& it) {
  if (it.smallest_rate >= 0) return it.smallest_rate;
  double least = 0;
  for (int type = 0; type < pool().types(); ++type) {
    const JobCurve& c = curve(it, type);
    if (c.useful.empty()) continue;
    const double r = c.at(c.useful.front());
    if (r > 0 && (least == 0 || r < least)) least = r;
  }
  return it.smallest_rate = least;
}

// The GPU types a waiting job tries to start on at its minimum: HAS's order, the tightest
// memory first (Morphling); under Sia those whose free GPUs hold its minimum first, and
// of them the type where that minimum is worth most, as its integer program would choose:
// a job shrinks others to start only where no type has room for it.
std::vector<int> Round::admission_types(Item& it) {
  std::vector<int> types = pool().types_by_memory();
  if (options_.objective != Objective::normalized_goodput) return types;
  std::vector<std::pair<bool, double>> rank(static_cast<std::size_t>(pool().types()), {false, 0});
  for (int type : types)
    if (!curve(it, type).useful.empty()) {
      const int m = min_gpus(it, type);
      rank[static_cast<std::size_t>(type)] = {free_for(it, type) >= m, value(it, type, m)};
    }
  std::stable_sort(types.begin(), types.end(),
                   [&](int a, int b) { return rank[static_cast<std::size_t>(a)] > rank[static_cast<std::size_t>(b)]; });
  return types;
}

// Objective::completion_rate: the job done in R/r seconds, after `restart` more.
double Round::completion_value(const Item& it, double rate, double restart) const {
  return 1.0 / (it.remaining / rate + restart);
}

// One step down the curve, never below the minimum; -1 when the job cannot shrink. A job
// holding GPUs on nodes it may only stay on (JobState::nodes_kept) shrinks there only
// without a requeue (whole nodes, Slurm keeping the rest): requeued, it could start
// nowhere it runs now, and would lose its GPUs for another job's gain.
int Round::shrink_target(Item& it) {
  if (it.type < 0 || it.gpus <= 0) return -1;
  const int m = min_gpus(it, it.type);
  if (it.gpus <= m) return -1;
  const int to = std::max(curve(it, it.type).previous(it.gpus), m);
  if (it.type == it.current_type && kept_gpus(it.job) > 0 && path_to(it, it.type, to) == ChangePath::requeue &&
      !shrinks_where_it_runs(it, to))
    return -1;
  return to;
}

// Whether `gpus` whole nodes of what the job runs on hold it, the GPUs it keeps being a
// part of its current ones cell by cell: a shrink, though another job took GPUs it gave
// up (which path_to() prices as a requeue: it cannot return to all of its allocation).
bool Round::shrinks_where_it_runs(const Item& it, int gpus) const {
  const NodeShape from = node_shape(view_.nodes, view_.jobs[it.job].current.slices);
  if (it.type != it.current_type || !from.uniform || from.gpus_per_node <= 0 || gpus >= it.current_gpus ||
      gpus % from.gpus_per_node != 0)
    return false;
  for (int c : cells_.of_type(it.current_type))
    if (held(it.job, c) > current_held(it.job, c)) return false;
  return true;
}

void Round::push_victim(std::size_t i) {
  Item& it = items_[i];
  const int to = shrink_target(it);
  if (to < 0) return;
  const double loss = (value(it, it.type, it.gpus) - value(it, it.type, to)) / (it.gpus - to);
  victims_[static_cast<std::size_t>(it.type)].push({loss, i, it.version});
}

// GetLowestSlopeOverMinJob: the cheapest job to shrink on `type`, other than `requester`;
// one backing off only `for_minimum` (a requester below its minimum).
bool Round::pop_victim(int type, std::size_t requester, bool for_minimum, Victim* out) {
  auto& heap = victims_[static_cast<std::size_t>(type)];
  std::vector<Victim> skipped;
  bool found = false;
  while (!heap.empty()) {
    Victim v = heap.top();
    heap.pop();
    if (v.version != items_[v.item].version || items_[v.item].type != type) continue;  // stale
    // A victim on nodes the requester may not run on gives it nothing (its partitions).
    if (v.item == requester || (items_[v.item].backing_off && !for_minimum) || !holds_for(v.item, type, requester)) {
      skipped.push_back(v);
      continue;
    }
    *out = v;
    found = true;
    break;
  }
  for (const Victim& v : skipped) heap.push(v);
  return found;
}

// Whether the round leaves the job's allocation as it is: its GPU counts, and on its first
// type the cells they are in (a victim that gave up GPUs where another job may run, and
// regrew where it may not, moves).
bool Round::unchanged(const Item& it) const {
  if (it.type != it.current_type || it.gpus != it.current_gpus || it.extra_type != it.current_extra_type ||
      it.extra_gpus != it.current_extra_gpus)
    return false;
  if (it.runs_in_cells)
    for (int c : cells_.of_type(it.type))
      if (held(it.job, c) != current_held(it.job, c)) return false;
  return true;
}

// Whether a running job gave up GPUs of a cell where it runs that it cannot take back
// there (free GPUs of the cell): it moves, a requeue, whatever its count. Never where its
// type is one cell (no restricted jobs), where a count alone says where a job is.
bool Round::left_its_cells(const Item& it) const {
  if (!it.runs_in_cells || cells_.of_type(it.current_type).size() <= 1) return false;
  for (int c : cells_.of_type(it.current_type))
    if (held(it.job, c) + free_[static_cast<std::size_t>(c)] < current_held(it.job, c)) return true;
  return false;
}

// Whether `slices` hold, cell by cell, the GPUs of its type the round gave the job.
bool Round::on_held_cells(const Item& it, const std::vector<Slice>& slices) const {
  std::vector<int> on(static_cast<std::size_t>(cells_.cells()), 0);
  for (const Slice& s : slices) on[static_cast<std::size_t>(cells_.cell_of_node(s.node))] += s.gpus;
  for (int c : cells_.of_type(it.type))
    if (on[static_cast<std::size_t>(c)] != held(it.job, c)) return false;
  return true;
}

void Round::set(std::size_t i, int type, int gpus) {
  Item& it = items_[i];
  undo_.push_back({i, -1, it.type, it.gpus});
  it.type = gpus > 0 ? type : -1;
  it.gpus = gpus;
  ++it.version;
}

// Job i takes `gpus` free GPUs of `cell` (gives them back when negative).
void Round::transfer(std::size_t i, int cell, int gpus) {
  free_[static_cast<std::size_t>(cell)] -= gpus;
  held(i, cell) += gpus;
  undo_.push_back({i, cell, -1, gpus});
}

// The free GPUs of `type` on the nodes the job may run on.
int Round::free_for(const Item& it, int type) const {
  int free = 0;
  for (int c : cells_.order(it.job, type)) free += free_[static_cast<std::size_t>(c)];
  return free;
}

// Job i takes up to `gpus` free GPUs of `type` where it may run, first in the cells where
// it runs; how many it got.
int Round::take_free(std::size_t i, int type, int gpus) {
  int taken = 0;
  for (const bool where_it_runs : {true, false})
    for (int c : cells_.order(i, type)) {
      const bool runs_there = items_[i].runs_in_cells && current_held(i, c) > 0;
      const int t = runs_there == where_it_runs ? std::min(gpus - taken, free_[static_cast<std::size_t>(c)]) : 0;
      if (t > 0) transfer(i, c, t);
      taken += std::max(t, 0);
    }
  return taken;
}

// A victim shrinking by `gpus` on `type` frees them where `requester` may run first.
void Round::release(std::size_t victim, int type, int gpus, std::size_t requester) {
  std::vector<int> cells = cells_.order(requester, type);
  for (int c : cells_.of_type(type))
    if (std::find(cells.begin(), cells.end(), c) == cells.end()) cells.push_back(c);
  for (int c : cells) {
    const int t = std::min(gpus, held(victim, c));
    if (t > 0) transfer(victim, c, -t);
    gpus -= std::max(t, 0);
  }
}

// Whether shrinking `victim` on `type` can free GPUs where `requester` may run.
bool Round::holds_for(std::size_t victim, int type, std::size_t requester) const {
  const std::vector<int>& cells = cells_.order(requester, type);
  return std::any_of(cells.begin(), cells.end(),
                     [&](int c) { return held(victim, c) > 0; });
}

void Round::rollback(std::size_t mark) {
  std::vector<std::size_t> touched;
  while (undo_.size() > mark) {
    const Undo u = undo_.back();
    undo_.pop_back();
    if (u.cell >= 0) {
      free_[static_cast<std::size_t>(u.cell)] += u.gpus;
      held(u.item, u.cell) -= u.gpus;
    } else {
      items_[u.item].type = u.type;
      items_[u.item].gpus = u.gpus;
      ++items_[u.item].version;
      touched.push_back(u.item);
    }
  }
  for (std::size_t i : touched) push_victim(i);
}

// ScheduleJob (lines 6-19) on one GPU type: grow job i one step of its curve at a time,
// from free GPUs first, then by shrinking the lowest-slope job above its minimum while
// job i is below its own minimum or its slope is higher (line 14).
bool Round::grow(std::size_t i, int type, bool to_min_only) {
  Item& it = items_[i];
  if (it.type >= 0 && it.type != type) return false;
  // Settling keeps a running job where it is; when that is below its minimum (a guaranteed
  // job held to its request) it must move anyway, and back to the minimum, not out.
  if (it.settling && !(to_min_only && it.current_gpus > 0)) return false;
  const JobCurve& c = curve(it, type);
  const int m = min_gpus(it, type);
  const std::size_t mark = undo_.size();
  for (int g = it.gpus;;) {
    if (to_min_only && g >= m) break;
    const int next = c.next(g);
    if (next == 0) break;
    // Past its count, a job on nodes it may only stay on moves by a requeue: the GPUs it
    // holds there (cells it does not reach) it needs again where it may start.
    const int left = g <= it.current_gpus && next > it.current_gpus && type == it.current_type ? kept_gpus(i) : 0;
    const int need = next - g + left;
    const bool below_min = g < m;
    const double gain = (value(it, type, next) - value(it, type, g)) / need;
    if (!below_min && gain <= kNoGain) break;
    // Leaving a running allocation must pay MinReconfigureGain on top of the restart.
    if (!below_min && g == it.current_gpus && type == it.current_type &&
        value(it, type, next) < value(it, type, g) * (1 + view_.min_reconfigure_gain))
      break;
    const std::size_t step = undo_.size();
    if (left > 0) leave_kept(i);
    int rest = need - take_free(i, type, need);
    while (rest > 0) {
      Victim v;
      if (!pop_victim(type, i, below_min, &v)) break;
      if (!below_min && !(gain > v.slope)) {
        victims_[static_cast<std::size_t>(type)].push(v);
        break;
      }
      Item& victim = items_[v.item];
      // Its entry is current (no set() since), but its shrink may not be: another job took
      // GPUs it gave up, and a job on nodes it may only stay on would now be requeued.
      const int to = shrink_target(victim);
      if (to < 0 || to >= victim.gpus) continue;
      const int freed = victim.gpus - to;
      set(v.item, type, to);
      release(v.item, type, freed, i);
      push_victim(v.item);
      rest -= take_free(i, type, rest);
    }
    if (rest > 0) {
      rollback(step);
      break;
    }
    set(i, type, next);
    g = next;
  }
  if (to_min_only && it.gpus < m) {
    rollback(mark);
    return false;
  }
  push_victim(i);
  return it.gpus > 0;
}

// The cells of its type where running job i holds GPUs but may not take them (the nodes
// it may only stay on: FreeCells).
std::vector<int> Round::kept_cells(std::size_t i) const {
  const Item& it = items_[i];
  std::vector<int> kept;
  if (!it.runs_in_cells || view_.jobs[i].nodes_kept.empty()) return kept;
  const std::vector<int>& reached = cells_.order(i, it.current_type);
  for (int c : cells_.of_type(it.current_type))
    if (held(i, c) > 0 && std::find(reached.begin(), reached.end(), c) == reached.end()) kept.push_back(c);
  return kept;
}

int Round::kept_gpus(std::size_t i) const {
  int gpus = 0;
  for (int c : kept_cells(i)) gpus += held(i, c);
  return gpus;
}

// Job i gives back its GPUs there.
void Round::leave_kept(std::size_t i) {
  for (int c : kept_cells(i)) transfer(i, c, -held(i, c));
}

double Round::first_gain(Item& it, int type) {
  const int next = curve(it, type).next(it.gpus);
  if (next == 0) return -std::numeric_limits<double>::infinity();
  return (value(it, type, next) - value(it, type, it.gpus)) / (next - it.gpus);
}

void Round::init() {
  const int types = pool().types();
  free_.resize(static_cast<std::size_t>(cells_.cells()));
  victims_.resize(static_cast<std::size_t>(types));
  for (int c = 0; c < cells_.cells(); ++c) free_[static_cast<std::size_t>(c)] = cells_.capacity(c);
  items_.resize(view_.jobs.size());
  held_.assign(view_.jobs.size() * static_cast<std::size_t>(cells_.cells()), 0);
  for (std::size_t i = 0; i < view_.jobs.size(); ++i) {
    const JobState& j = view_.jobs[i];
    Item& it = items_[i];
    it.job = i;
    it.curves.assign(static_cast<std::size_t>(types), nullptr);
    it.min.assign(static_cast<std::size_t>(types), -1);
    it.guaranteed = j.sla == Sla::guaranteed;
    it.remaining = std::max(expected_remaining_iterations(j, view_, oracle_), 1e-9);
    it.overdue = overdue(j, view_);
    configure(it, j);
    release_request(it);
    if (!j.running()) continue;
    it.type = it.current_type = assignment_.current_type(i);
    it.gpus = it.current_gpus = j.current.gpus();
    if (!j.current.groups.empty()) {  // spanning two types: pass 1 sees its first group, the second is free
      it.current_gpus = 0;
      for (const Slice& s : j.current.slices) {
        const int t = pool().type_of(s.node);
        if (t == it.current_type) it.current_gpus += s.gpus;
        else it.current_extra_type = t;
      }
      it.current_extra_gpus = j.current.gpus() - it.current_gpus;
      it.gpus = it.current_gpus;
    }
    it.ready_left = std::max(0.0, j.ready_s - view_.now_s);
    it.settling = view_.payback_s > 0 && j.last_restart_s >= 0 && view_.now_s - j.last_restart_s < view_.payback_s;
    it.backing_off = options_.restart_backoff && view_.restart_backoff && view_.payback_s > 0 && j.restarts > 0 &&
                     j.last_restart_s >= 0 &&
                     view_.now_s - j.last_restart_s < view_.payback_s * j.restarts;
    const double s = oracle_.current_s(j, view_.nodes);
    it.current_rate = s > 0 ? 1.0 / s : 0.0;
    if (it.freedom == PlanFreedom::exact && !j.runs_request()) {  // held to its request: it moves back
      it.type = -1;
      it.gpus = 0;
      continue;
    }
    for (const Slice& slice : j.current.slices)
      if (pool().type_of(slice.node) == it.type) {
        const int c = cells_.cell_of_node(slice.node);
        free_[static_cast<std::size_t>(c)] -= slice.gpus;
        held(i, c) += slice.gpus;
      }
    it.runs_in_cells = true;
  }
  current_held_ = held_;
  for (std::size_t i = 0; i < items_.size(); ++i) push_victim(i);
}

void Round::configure(Item& it, const JobState& job) {
  const bool data_parallel = job.requested_plan.tp == 1 && job.requested_plan.pp == 1;
  if (options_.measured_guarantee && it.guaranteed && (job.promised_iteration_s <= 0 || job.held_to_request)) {
    it.freedom = PlanFreedom::exact;
    it.resize = false;
    assignment_.set_freedom(it.job, it.freedom);
    return;
  }
  switch (options_.freedom) {
    case FreedomRule::any: break;
    case FreedomRule::fixed:
      it.freedom = options_.replan ? PlanFreedom::any : PlanFreedom::exact;
      it.resize = false;
      break;
    case FreedomRule::scale_dp: it.freedom = PlanFreedom::scale_dp; break;
    case FreedomRule::sia:
      it.freedom = data_parallel ? PlanFreedom::scale_dp : PlanFreedom::exact;
      it.resize = data_parallel;
      break;
  }
  assignment_.set_freedom(it.job, it.freedom);
}

// A guaranteed job held to its request (its promise not measured yet) whose request no
// GPU type here can hold (more GPUs of one type than there are, or a shape Slurm does not
// place) would wait for ever, or be taken back to that request each round: for the round
// it is best-effort, under the freedom the policy gives those.
void Round::release_request(Item& it) {
  if (!it.guaranteed || it.freedom != PlanFreedom::exact) return;
  for (int type = 0; type < pool().types(); ++type)
    if (!curve(it, type).useful.empty()) return;
  it.guaranteed = false;
  it.freedom = PlanFreedom::any;  // an Item's defaults, which configure() narrows
  it.resize = true;
  configure(it, view_.jobs[it.job]);
  std::fill(it.curves.begin(), it.curves.end(), nullptr);
  it.smallest_rate = -1;
}

// Lines 2-3: privileged guaranteed jobs reach their minimum demand, oldest first (under
// Sia every waiting job reaches its smallest configuration). A tenant's guaranteed jobs
// are privileged while their minimums fit in its GPU quota, running jobs first; the
// others are best-effort for this round: they run only where their slope earns it and
// may be preempted.
bool Round::within_quota(const std::map<std::string, long>& used, const JobState& job, int gpus) const {
  const auto quota = view_.quota_gpus.find(job.tenant);
  if (quota == view_.quota_gpus.end()) return true;
  const auto taken = used.find(job.tenant);
  return (taken == used.end() ? 0 : taken->second) + gpus <= quota->second;
}

// The running guaranteed jobs, oldest first, each with whether its tenant's quota still
// holds its minimum on its type after the older ones' (those it holds count in `used`).
std::vector<std::pair<std::size_t, bool>> Round::running_within_quota(std::map<std::string, long>& used) {
  std::vector<std::size_t> running;
  for (const Item& it : items_)
    if (it.guaranteed && view_.jobs[it.job].running()) running.push_back(it.job);
  std::stable_sort(running.begin(), running.end(), [&](std::size_t a, std::size_t b) {
    return view_.jobs[a].submit_time_s < view_.jobs[b].submit_time_s;
  });
  std::vector<std::pair<std::size_t, bool>> out;
  for (std::size_t i : running) {
    const JobState& j = view_.jobs[i];
    const int m = min_gpus(items_[i], items_[i].current_type);
    const bool held = within_quota(used, j, m);
    if (held) used[j.tenant] += m;
    out.emplace_back(i, held);
  }
  return out;
}

void Round::schedule_minimums() {
  std::map<std::string, long> used;
  auto demote = [&](Item& it) {
    it.guaranteed = false;
    std::fill(it.min.begin(), it.min.end(), -1);
    push_victim(it.job);
  };
  std::vector<std::size_t> waiting;
  for (const Item& it : items_)
    if (!view_.jobs[it.job].running() && (it.guaranteed || it.overdue || options_.admit_at_minimum))
      waiting.push_back(it.job);
  std::stable_sort(waiting.begin(), waiting.end(), [&](std::size_t a, std::size_t b) {
    return view_.jobs[a].submit_time_s < view_.jobs[b].submit_time_s;
  });
  // Overdue jobs first, longest waiting first: nothing submitted later may take their GPUs.
  std::stable_sort(waiting.begin(), waiting.end(), [&](std::size_t a, std::size_t b) {
    if (items_[a].overdue != items_[b].overdue) return items_[a].overdue;
    return items_[a].overdue && view_.jobs[a].waited_s > view_.jobs[b].waited_s;
  });
  for (const auto& [i, privileged] : running_within_quota(used)) {
    Item& it = items_[i];
    if (!privileged) {
      demote(it);
      continue;
    }
    // Its minimum rose (a new promise, or held to its request).
    if (it.gpus < min_gpus(it, it.current_type)) grow(i, it.current_type, true);
  }
  for (std::size_t i : waiting) {
    Item& it = items_[i];
    const JobState& j = view_.jobs[i];
    bool over_quota = it.guaranteed;  // on every type, until one fits the quota
    bool placed = false;
    for (int type : admission_types(it)) {
      if (curve(it, type).useful.empty()) continue;
      const int m = min_gpus(it, type);
      if (it.guaranteed && !within_quota(used, j, m)) continue;
      over_quota = false;
      if (grow(i, type, true)) {
        if (it.guaranteed) used[j.tenant] += m;
        placed = true;
        break;
      }
    }
    if (placed || !over_quota) continue;
    demote(it);
    if (options_.admit_at_minimum || it.overdue)
      for (int type : admission_types(it))
        if (!curve(it, type).useful.empty() && grow(i, type, true)) break;
  }
}

// Lines 4-5: SortBySlope(best-effort ∪ running), steepest first, then ScheduleJob each.
void Round::schedule_by_slope() {
  std::vector<std::pair<double, std::size_t>> order;
  for (Item& it : items_) {
    if (it.gpus == 0 && (it.guaranteed || it.overdue || options_.admit_at_minimum)) continue;  // it starts at a minimum or waits
    double best = -std::numeric_limits<double>::infinity();
    for (int type = 0; type < pool().types(); ++type)
      if (it.type < 0 || it.type == type) best = std::max(best, first_gain(it, type));
    if (best > kNoGain || it.gpus > 0) order.emplace_back(best, it.job);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [gain, i] : order) {
    Item& it = items_[i];
    if (it.type >= 0) {
      grow(i, it.type, false);
      continue;
    }
    std::vector<std::pair<double, int>> types;
    for (int type : pool().types_by_memory()) types.emplace_back(first_gain(it, type), type);
    std::stable_sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [g, type] : types)
      if (g > kNoGain && grow(i, type, false)) break;
  }
}

// Algorithm 1's ScheduleJob searches every node for a running job as for a waiting one,
// while pass 1 grows a running job on its own GPU type only. After it, a running
// best-effort job that pass 1 did not grow moves to GPUs of another type that no job took
// when they are worth MinReconfigureGain more to it than what it holds, its requeue paid
// (a type change is one); it moves only onto that many GPUs (place()), and the GPUs it
// leaves go to waiting jobs next round (or to a JABAS job spanning types, this round).
// Guaranteed jobs keep the type their promise holds on.
void Round::move_to_other_types() {
  if (pool().types() < 2) return;
  for (Item& it : items_) {
    if (!movable(it) || it.gpus <= 0 || it.type != it.current_type || it.gpus > it.current_gpus) continue;
    double best = value(it, it.type, it.gpus) * (1 + view_.min_reconfigure_gain);
    int best_type = -1, best_gpus = 0;
    for (int type = 0; type < pool().types(); ++type) {
      if (type == it.type) continue;
      const int free = free_for(it, type);
      for (int g : curve(it, type).useful) {
        if (g > free) break;
        if (const double v = value(it, type, g); v > best) {
          best = v;
          best_type = type;
          best_gpus = g;
        }
      }
    }
    if (best_type < 0) continue;
    for (int c : cells_.of_type(it.type))
      if (held(it.job, c) > 0) transfer(it.job, c, -held(it.job, c));
    set(it.job, best_type, best_gpus);
    take_free(it.job, best_type, best_gpus);
    it.changed_type = true;
    push_victim(it.job);
  }
}

// Whether a running job may change GPU type (move_to_other_types()).
bool Round::movable(const Item& it) const {
  return view_.jobs[it.job].running() && it.current_type >= 0 && !it.guaranteed && !it.settling &&
         !it.spans_types_now() && !view_.jobs[it.job].record_locked;
}

// JABAS (seed 004) after pass 1: GPUs of a type that no job took this round can join a
// best-effort job running (or starting) on another type, as one data-parallel job whose
// faster GPUs accumulate more micro-batches (libmorph/planner/hetero_plan.h). Each such
// job, in submission order, takes whole nodes of one other type (as many GPUs on each as
// on its own nodes: one record, one count per node) when its value rises by
// MinReconfigureGain over its allocation of pass 1; keeping the second type it already
// spans needs no margin. Guaranteed jobs keep one type (their promise is a homogeneous
// plan's), and so do jobs that adapt their batch (AppProfile::adaptive_batch).
void Round::spill_to_other_types() {
  if (!view_.heterogeneous_jobs || options_.objective != Objective::completion_rate) return;
  for (Item& it : items_) {
    if (it.type < 0 || it.gpus <= 0 || it.guaranteed || it.freedom != PlanFreedom::any || !it.resize) continue;
    if (oracle_.app(view_.jobs[it.job].app).adaptive_batch) continue;
    const Shape own = packed_shape(view_.nodes, pool().any_node_of(it.type), it.gpus);
    const int per_node = own.gpus.front();
    if (std::any_of(own.gpus.begin(), own.gpus.end(), [&](int g) { return g != per_node; })) continue;
    const bool kept_first = it.type == it.current_type && it.gpus == it.current_gpus;
    const JobState& j = view_.jobs[it.job];
    const ChangePath start = j.running() ? ChangePath::requeue : start_path(j);  // a change of GPU types
    double best = value(it, it.type, it.gpus);
    int best_type = -1, best_gpus = 0;
    for (int t = 0; t < pool().types(); ++t) {
      if (t == it.type || per_node > pool().gpus_per_node(t)) continue;
      for (int nodes = 1; nodes * per_node <= free_for(it, t); ++nodes) {
        const bool current = kept_first && t == it.current_extra_type && nodes * per_node == it.current_extra_gpus;
        if (it.settling && !current) continue;  // its restart is not paid back: it keeps what it has
        const Shape other = packed_shape(view_.nodes, pool().any_node_of(t), nodes * per_node);
        const PlanChoice& c = oracle_.best_hetero(j, view_.nodes, own, other);
        if (!c.feasible) continue;
        const double v = current ? completion_value(it, it.current_rate > 0 ? it.current_rate : c.rate(), it.ready_left)
                                 : completion_value(it, c.rate(), view_.restart.of(start));
        if (v <= (current ? best : best * (1 + view_.min_reconfigure_gain))) continue;
        best = v;
        best_type = t;
        best_gpus = nodes * per_node;
      }
    }
    if (best_type < 0) continue;
    it.extra_type = best_type;
    it.extra_gpus = best_gpus;
    take_free(it.job, best_type, best_gpus);
  }
}

// A job that keeps its GPUs keeps its plan (Algorithm 1, lines 18-24) unless the model
// has changed its mind since it chose that plan (Morphling §4, continuous fitting: an
// online refit moved the plan's predicted time, JobState::planned_iteration_s, by more
// than MinReconfigureGain) and now predicts a plan there that is MinReconfigureGain
// faster than the job runs now (measured, else predicted) and pays back the restart
// within the job's expected remaining work. A model that has not changed (the
// simulator's) never replans a job where it runs.
void Round::hold_or_replan(const Item& it) {
  const JobState& j = view_.jobs[it.job];
  const double gain = view_.min_reconfigure_gain;
  if (options_.replan_in_place && !it.settling && it.freedom != PlanFreedom::exact && j.planned_iteration_s > 0 &&
      it.current_rate > 0 && !it.spans_types_now()) {
    const double predicted_s = oracle_.predict_s(j, j.current.plan, view_.nodes, j.current.slices);
    const double now_s = 1 / it.current_rate;
    if (predicted_s > 0 && std::abs(predicted_s - j.planned_iteration_s) > gain * j.planned_iteration_s) {
      const PlanChoice best = assignment_.best_in_place(it.job);
      if (best.feasible && best.plan != j.current.plan && best.iteration_s < (1 - gain) * now_s) {
        // A requeue (its record locked, more host memory per node) where it may only stay: never.
        const ChangePath path = path_to(it, it.current_type, it.current_gpus, &best.plan);
        if (it.remaining * (now_s - best.iteration_s) > view_.restart.of(path) && !strands(j, j.current.slices, path)) {
          assignment_.hold(it.job, best.plan);
          return;
        }
      }
    }
  }
  assignment_.hold(it.job);
}

// A guaranteed job learns its promise on its request on the nodes it asked for, the
// fewest unless its user said more (observe_iteration); until then, and once held to its
// request, it runs its request where it started, spread over more nodes when they were
// fragmented. It moves onto the fewest nodes once their GPUs are free and the speed gained
// over its expected remaining work pays for the restart.
bool Round::runs_request_spread(const Item& it) const {
  const JobState& j = view_.jobs[it.job];
  return options_.measured_guarantee && it.guaranteed && it.freedom == PlanFreedom::exact &&
         j.runs_request() && !it.spans_types_now() &&
         !on_requested_nodes(view_.nodes, j);
}

void Round::repack(const Item& it) {
  const JobState& j = view_.jobs[it.job];
  const std::vector<bool> startable = nodes_startable(j);  // a repack moves it: a requeue
  assignment_.release(it.job);
  for (int type : repack_types(it)) {
    const std::vector<Slice> slices = pool().place(type, it.current_gpus, &startable);
    if (slices.empty() || !on_fewest_nodes(view_.nodes, JobAllocation{slices, j.requested_plan})) continue;
    const double packed_s = oracle_.predict_s(j, j.requested_plan, view_.nodes, slices);
    const bool pays = packed_s > 0 && it.current_rate > 0 &&
                      it.remaining * (1 / it.current_rate - packed_s) >
                          view_.restart.of(change_path(j, view_.nodes, slices, j.requested_plan, oracle_));
    if (pays && assignment_.start_on(it.job, slices)) return;
  }
  assignment_.hold(it.job);
}

// Where a spread request may repack: its own nodes' pool, then, on shares of nodes that
// other jobs use (each share a pool of its own, NodePool), the pools of its node type with
// more GPUs per node that the round left enough of free.
std::vector<int> Round::repack_types(const Item& it) const {
  auto node_type = [&](int t) -> const std::string& {
    return view_.nodes[static_cast<std::size_t>(pool().any_node_of(t))].node_type().name;
  };
  std::vector<int> types{it.current_type};
  for (int t = 0; t < pool().types(); ++t)
    if (node_type(t) == node_type(it.current_type) && pool().gpus_per_node(t) > pool().gpus_per_node(it.current_type) &&
        free_for(it, t) >= it.current_gpus)
      types.push_back(t);
  return types;
}

// Its tentative count, else the next smaller on its curve down to its minimum. A job
// that grows on nodes it may only stay on (JobState::nodes_kept), where placement refuses
// the requeue, keeps what it has once down to that: no restart in place for nothing.
bool Round::start_down_curve(Item& it) {
  const int m = std::max(1, min_gpus(it, it.type));
  const bool grows_where_kept = !view_.jobs[it.job].nodes_kept.empty() && it.type == it.current_type &&
                                it.gpus > it.current_gpus && !it.spans_types_now();
  for (int g = it.gpus; g >= m; g = curve(it, it.type).previous(g)) {
    if (grows_where_kept && g <= it.current_gpus && assignment_.keep(it.job)) return true;
    if (assignment_.start(it.job, it.type, g)) return true;
  }
  return false;
}

// A guaranteed job starting its request where it cannot learn its promise: over more
// nodes than it asked for (runs_request_spread() once it runs).
bool Round::learns_promise_spread(const Item& it) const {
  if (!options_.measured_guarantee || !it.guaranteed || it.freedom != PlanFreedom::exact) return false;
  const JobAllocation& a = assignment_.target(it.job);
  return !a.empty() && !on_requested_nodes(view_.nodes, view_.jobs[it.job], a);
}

// A guaranteed or overdue job whose GPUs are free but on nodes that cannot hold them
// (under morphd one count per node: 8 GPUs free as 6 + 2), or a guaranteed request that
// would start spread over more nodes than it asked for, moves best-effort jobs that stay
// put on its type to other nodes of that type, the smallest first, until it fits (on the
// nodes it asked for) and so do they, each on as many GPUs as it had (Tenplex §2.2:
// redeployment, "to de-fragment it onto fewer workers"). Each mover pays a restart;
// nothing moves unless all of them fit. False with the job unplaced.
bool Round::defragment(Item& it, std::vector<std::size_t>& held) {
  std::vector<std::size_t> movable;
  for (std::size_t k : held) {
    const Item& h = items_[k];
    if (h.current_type == it.type && !h.guaranteed && !h.overdue && !h.spans_types_now() &&
        !view_.jobs[k].record_locked && frees_room_for(view_.jobs[it.job], assignment_.target(k)))
      movable.push_back(k);
  }
  std::stable_sort(movable.begin(), movable.end(),
                   [&](std::size_t a, std::size_t b) { return items_[a].current_gpus < items_[b].current_gpus; });
  std::vector<std::pair<std::size_t, JobAllocation>> moved;
  for (std::size_t k : movable) {
    moved.emplace_back(k, assignment_.take_back(k));
    if (!start_down_curve(it)) continue;
    if (learns_promise_spread(it)) {
      assignment_.release(it.job);
      continue;
    }
    std::stable_sort(moved.begin(), moved.end(),
                     [](const auto& a, const auto& b) { return a.second.gpus() > b.second.gpus(); });  // largest first
    const bool all = std::all_of(moved.begin(), moved.end(), [&](const auto& m) {
      return assignment_.start(m.first, it.type, m.second.gpus());
    });
    if (all) {  // they start where they go now: no longer held
      for (const auto& [job, was] : moved) held.erase(std::find(held.begin(), held.end(), job));
      return true;
    }
    assignment_.release(it.job);
    for (const auto& [job, was] : moved)
      if (assignment_.placed(job)) assignment_.release(job);
  }
  for (auto& [job, was] : moved) assignment_.put_back(job, std::move(was));
  return false;
}

// Lines 18-24: unchanged jobs stay put, shrinking ones on the nodes they keep; the others
// are placed by HAS, largest first (guaranteed and overdue jobs before the others), each
// falling back down its curve when the nodes are too fragmented or AllocMem fails; a
// guaranteed or overdue job that still does not fit moves best-effort jobs out of its way
// (defragment()); a running job placed nowhere keeps what it has, where that is free.
std::vector<Decision> Round::place() {
  std::vector<std::size_t> spread, moving, held;
  for (const JobState& j : view_.jobs) {
    const auto& allowed = j.nodes_allowed;
    nodes_allowed_.push_back(allowed.empty() ? view_.nodes.size()
                                             : static_cast<std::size_t>(std::count(allowed.begin(), allowed.end(), true)));
  }
  for (Item& it : items_) {
    if (it.gpus == 0) continue;
    // A job held to its request on the GPUs it has goes back to its request there.
    const bool back = it.freedom == PlanFreedom::exact && !view_.jobs[it.job].runs_request();
    if (!unchanged(it) || back)
      moving.push_back(it.job);
    else if (runs_request_spread(it))
      spread.push_back(it.job);
    else {
      hold_or_replan(it);
      held.push_back(it.job);
    }
  }
  for (std::size_t i : spread) assignment_.hold(i);
  for (std::size_t i : spread) repack(items_[i]);  // after every job that stays, before those that move
  // A job shrinking in whole nodes stays on the nodes Slurm keeps (start_shrunk())
  // before the jobs that move take them: its shrink is not turned into a requeue.
  // (Slurm keeps its first nodes: where the round freed others, for a job that may run
  // only there, it moves instead.)
  std::erase_if(moving, [&](std::size_t i) {
    const Item& it = items_[i];
    if (it.extra_type >= 0 || !assignment_.start_shrunk(i, it.type, it.gpus)) return false;
    if (on_held_cells(it, assignment_.target(i).slices)) return true;
    assignment_.release(i);
    return false;
  });
  std::stable_sort(moving.begin(), moving.end(), [&](std::size_t a, std::size_t b) {
    const Item& x = items_[a];
    const Item& y = items_[b];
    if ((x.guaranteed || x.overdue) != (y.guaranteed || y.overdue)) return x.guaranteed || x.overdue;
    // Jobs that may run on fewer nodes first: the others fit around them (partitions).
    if (nodes_allowed_[a] != nodes_allowed_[b]) return nodes_allowed_[a] < nodes_allowed_[b];
    if (x.gpus != y.gpus) return x.gpus > y.gpus;
    return view_.jobs[a].submit_time_s < view_.jobs[b].submit_time_s;
  });
  // Guaranteed and overdue jobs are placed before all others (the sort put them first):
  // a best-effort job changing type must not take the GPUs one of them runs on. In each
  // class, a job that changes GPU type goes first, onto exactly the GPUs it moved for (on
  // fewer it may be worth less than where it is), around the GPUs its class's other running
  // jobs hold where it can (pass 1 budgeted counts per type, not cells: a job that may only
  // stay where it is must keep its own); failing that it stays where it runs, before
  // another job can take the GPUs the round freed there. A running job the round
  // meant to give GPUs, placed nowhere, keeps those it has where nobody took them, before
  // the next class is placed: a preemption would gain nobody anything.
  const auto first_other = std::find_if(moving.begin(), moving.end(), [&](std::size_t i) {
    return !(items_[i].guaranteed || items_[i].overdue);
  });
  const auto changes_type = [&](std::size_t i) { return items_[i].changed_type && items_[i].extra_type < 0; };
  auto place_class = [&](std::vector<std::size_t>::const_iterator from, std::vector<std::size_t>::const_iterator to) {
    std::vector<std::size_t> shielded, unplaced;
    if (std::any_of(from, to, changes_type))
      for (auto i = from; i != to; ++i)
        if (!changes_type(*i) && view_.jobs[*i].running() && !assignment_.placed(*i) && assignment_.keep(*i))
          shielded.push_back(*i);
    for (auto i = from; i != to; ++i)
      if (changes_type(*i) && !assignment_.start(*i, items_[*i].type, items_[*i].gpus)) unplaced.push_back(*i);
    for (std::size_t i : shielded) assignment_.release(i);
    for (std::size_t i : unplaced)
      if (!assignment_.start(i, items_[i].type, items_[i].gpus)) assignment_.keep(i);
    for (auto i = from; i != to; ++i) {
      if (changes_type(*i)) continue;
      Item& it = items_[*i];
      if (it.extra_type >= 0 && assignment_.start_hetero(*i, it.type, it.gpus, it.extra_type, it.extra_gpus)) continue;
      if (start_down_curve(it) ? learns_promise_spread(it) : it.guaranteed || it.overdue) {
        assignment_.release(*i);
        if (!defragment(it, held)) start_down_curve(it);
      }
    }
    for (auto i = from; i != to; ++i)
      if (!assignment_.placed(*i) && view_.jobs[*i].running()) assignment_.keep(*i);
  };
  place_class(moving.begin(), first_other);
  place_class(first_other, moving.end());
  assignment_.grant_spare_cpus();
  return assignment_.decisions();
}

std::vector<Decision> Round::run() {
  init();
  schedule_minimums();
  schedule_by_slope();
  move_to_other_types();
  spill_to_other_types();
  return place();
}

// See elastic_steady(). A running job that cannot grow is never a victim either: a job
// shrinks only for another one's growth.
bool Round::steady() {
  init();
  // A running guaranteed job its tenant's quota no longer holds is demoted by the round
  // (schedule_minimums(): running jobs count first, oldest first), and may then move.
  if (!view_.quota_gpus.empty()) {
    std::map<std::string, long> used;
    for (const auto& [i, privileged] : running_within_quota(used))
      if (!privileged) return false;
  }
  std::vector<int> jobs_on_type(static_cast<std::size_t>(pool().types()), 0);
  for (const Item& it : items_)
    if (it.current_type >= 0) ++jobs_on_type[static_cast<std::size_t>(it.current_type)];
  for (Item& it : items_) {
    if (it.settling) return false;  // it may grow once its restart is paid back
    if (!view_.jobs[it.job].running()) {
      for (int type = 0; type < pool().types(); ++type)
        if (!curve(it, type).useful.empty()) return false;  // it may start
      continue;
    }
    if (it.type != it.current_type) return false;               // held to its request: it moves back
    if (runs_request_spread(it) && (free_for(it, it.type) > 0 || repack_types(it).size() > 1))
      return false;  // it may repack
    if (it.gpus < min_gpus(it, it.type)) return false;          // it grows to its minimum
    const int next = curve(it, it.type).next(it.gpus);
    if (next == 0) continue;                                     // no larger useful count
    if (jobs_on_type[static_cast<std::size_t>(it.type)] > 1) return false;  // it might take another's GPUs
    if (next - it.gpus <= free_for(it, it.type)) return false;  // free GPUs suffice
  }
  // A job may move to another type whose free GPUs run it faster: whether that pays its
  // requeue depends on its remaining work, which an estimate from attained service
  // (job_length.h) raises as it runs.
  for (Item& it : items_) {
    if (pool().types() < 2 || !movable(it) || it.current_rate <= 0) continue;
    for (int type = 0; type < pool().types(); ++type) {
      if (type == it.current_type) continue;
      const int free = free_for(it, type);
      for (int g : curve(it, type).useful)
        if (g <= free && curve(it, type).at(g) > it.current_rate * (1 + view_.min_reconfigure_gain)) return false;
    }
  }
  // A job may span idle GPUs of another type, or spans some now (released by init()).
  if (view_.heterogeneous_jobs && std::any_of(free_.begin(), free_.end(), [](int f) { return f > 0; })) return false;
  return true;
}

}  // namespace

std::vector<Decision> elastic_round(const ClusterView& view, PlanOracle& oracle, const ElasticOptions& options) {
  return Round(view, oracle, options).run();
}

bool elastic_steady(const ClusterView& view, PlanOracle& oracle, const ElasticOptions& options) {
  return Round(view, oracle, options).steady();
}

}  // namespace morph::policy
