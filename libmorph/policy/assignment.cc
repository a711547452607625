#include "libmorph/policy/assignment.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace morph::policy {

Assignment::Assignment(const ClusterView& view, PlanOracle& oracle, PlanFreedom freedom, CpuRule cpus)
    : view_(view),
      oracle_(oracle),
      freedom_(view.jobs.size(), freedom),
      cpus_(cpus),
      pool_(view.nodes),
      targets_(view.jobs.size()),
      started_(view.jobs.size(), false) {}

int Assignment::current_type(std::size_t job) const {
  const JobState& j = view_.jobs[job];
  return j.running() ? pool_.type_of(j.current.slices.front().node) : -1;
}

int Assignment::cpus_per_gpu(std::size_t job, int node) const {
  const NodeType& type = view_.nodes[static_cast<std::size_t>(node)].type;
  const int share = std::max(1, type.cpus / type.gpus);
  if (cpus_ == CpuRule::share) return share;
  const JobState& j = view_.jobs[job];
  const int requested = j.requested_cpus / std::max(1, j.requested_plan.gpus());
  return requested > 0 ? requested : share;
}

void Assignment::hold(std::size_t job) {
  const JobState& j = view_.jobs[job];
  pool_.take(j.current.slices);
  targets_[job] = j.current;
}

bool Assignment::keep(std::size_t job) {
  const JobState& j = view_.jobs[job];
  const bool free = std::all_of(j.current.slices.begin(), j.current.slices.end(), [&](const Slice& s) {
    return s.gpus <= pool_.free_gpus(s.node) && s.cpus <= pool_.free_cpus(s.node) &&
           s.memory_bytes <= pool_.free_memory(s.node) * (1 + 1e-12);
  });
  if (free) hold(job);
  return free;
}

void Assignment::hold(std::size_t job, const ExecutionPlan& plan) {
  hold(job);
  targets_[job].plan = plan;
}

PlanChoice Assignment::best_in_place(std::size_t job) {
  const JobState& j = view_.jobs[job];
  const Shape shape = shape_of(view_.nodes, j.current.slices);
  double memory_per_gpu = std::numeric_limits<double>::infinity();
  for (const Slice& s : j.current.slices)
    if (s.memory_bytes > 0 && s.gpus > 0) memory_per_gpu = std::min(memory_per_gpu, s.memory_bytes / s.gpus);
  return std::isinf(memory_per_gpu) ? oracle_.best(j, freedom_[job], view_.nodes, shape)
                                    : oracle_.best_within(j, freedom_[job], view_.nodes, shape, memory_per_gpu);
}

void Assignment::release(std::size_t job) {
  pool_.give(targets_[job].slices);
  targets_[job] = {};
  started_[job] = false;
}

JobAllocation Assignment::take_back(std::size_t job) {
  JobAllocation held = targets_[job];
  release(job);
  return held;
}

void Assignment::put_back(std::size_t job, JobAllocation target) {
  pool_.take(target.slices);
  targets_[job] = std::move(target);
  started_[job] = false;
}

bool Assignment::start(std::size_t job, int type, int gpus) {
  if (start_shrunk(job, type, gpus)) return true;
  const JobState& j = view_.jobs[job];
  std::vector<Slice> slices = pool_.place(type, gpus, &j.nodes_allowed);
  if (!slices.empty() && start_on(job, std::move(slices))) return true;
  if (j.nodes_kept.empty()) return false;
  const std::vector<bool> startable = nodes_startable(j);
  slices = pool_.place(type, gpus, &startable);
  return !slices.empty() && start_on(job, std::move(slices));
}

bool Assignment::start_shrunk(std::size_t job, int type, int gpus) {
  std::vector<Slice> kept = kept_by_shrink(job, type, gpus);
  return !kept.empty() && start_on(job, std::move(kept));
}

// Slurm shrinks a running job (scontrol update NumNodes, the shrink path) to the first of
// its nodes in its node order, which the view's follows: a shrink goes there, or the job
// would run where the policy did not put it.
std::vector<Slice> Assignment::kept_by_shrink(std::size_t job, int type, int gpus) const {
  const JobState& j = view_.jobs[job];
  if (!j.running() || j.record_locked || !j.current.groups.empty()) return {};
  std::vector<Slice> own = j.current.slices;
  const int per_node = own.front().gpus;
  const bool uniform = std::all_of(own.begin(), own.end(), [&](const Slice& s) {
    return s.gpus == per_node && pool_.type_of(s.node) == type;
  });
  if (!uniform || gpus >= j.current.gpus() || gpus % per_node != 0) return {};
  std::sort(own.begin(), own.end(), [](const Slice& a, const Slice& b) { return a.node < b.node; });
  own.resize(static_cast<std::size_t>(gpus / per_node));
  for (Slice& s : own) {
    if (pool_.free_gpus(s.node) < per_node) return {};
    s.cpus = 0;
    s.memory_bytes = 0;
  }
  return own;
}

namespace {

// Under morphd every node of a job gets the same CPUs, as its record holds one count per
// node (--cpus-per-task): the fewest per GPU that any node can give. The model predicts
// from that fewest count anyway (Shape::cpus_per_gpu).
void even_cpus(std::vector<Slice>& slices) {
  int per_gpu = std::numeric_limits<int>::max();
  for (const Slice& s : slices) per_gpu = std::min(per_gpu, s.cpus / s.gpus);
  for (Slice& s : slices) s.cpus = s.gpus * per_gpu;
}

}  // namespace

bool Assignment::start_on(std::size_t job, std::vector<Slice> slices) {
  const JobState& j = view_.jobs[job];
  double memory_per_gpu = std::numeric_limits<double>::infinity();
  for (Slice& s : slices) {
    const int free = pool_.free_cpus(s.node);
    if (free < s.gpus) return false;  // one CPU per GPU at the least
    s.cpus = std::min(free, s.gpus * cpus_per_gpu(job, s.node));
    memory_per_gpu = std::min(memory_per_gpu, pool_.free_memory(s.node) / s.gpus);
  }
  if (oracle_.uniform_nodes()) even_cpus(slices);
  const Shape shape = shape_of(view_.nodes, slices);
  PlanChoice choice = oracle_.best(j, freedom_[job], view_.nodes, shape);
  if (choice.feasible && choice.host_bytes_per_gpu > memory_per_gpu)  // AllocMem failed: a leaner plan
    choice = oracle_.best_within(j, freedom_[job], view_.nodes, shape, memory_per_gpu);
  if (!choice.feasible || choice.host_bytes_per_gpu > memory_per_gpu) return false;
  for (Slice& s : slices) s.memory_bytes = choice.host_bytes_per_gpu * s.gpus;
  if (!j.nodes_kept.empty() && strands(j, slices, change_path(j, view_.nodes, slices, choice.plan, oracle_)))
    return false;
  pool_.take(slices);
  targets_[job] = {std::move(slices), choice.plan};
  started_[job] = true;
  return true;
}

bool Assignment::start_hetero(std::size_t job, int type, int gpus, int extra_type, int extra_gpus) {
  const std::vector<bool> allowed = nodes_startable(view_.jobs[job]);  // a change of types is a requeue
  std::vector<Slice> slices = pool_.place(type, gpus, &allowed);
  const std::vector<Slice> extra = pool_.place(extra_type, extra_gpus, &allowed);
  if (slices.empty() || extra.empty()) return false;
  const std::size_t first_group = slices.size();
  slices.insert(slices.end(), extra.begin(), extra.end());
  double memory_per_gpu = std::numeric_limits<double>::infinity();
  for (Slice& s : slices) {
    if (s.gpus != slices.front().gpus) return false;  // one GPU count per node: the record's
    const int free = pool_.free_cpus(s.node);
    if (free < s.gpus) return false;
    s.cpus = std::min(free, s.gpus * cpus_per_gpu(job, s.node));
    memory_per_gpu = std::min(memory_per_gpu, pool_.free_memory(s.node) / s.gpus);
  }
  if (oracle_.uniform_nodes()) even_cpus(slices);
  const std::vector<Slice> first(slices.begin(), slices.begin() + static_cast<std::ptrdiff_t>(first_group));
  const std::vector<Slice> second(slices.begin() + static_cast<std::ptrdiff_t>(first_group), slices.end());
  const PlanChoice& choice =
      oracle_.best_hetero(view_.jobs[job], view_.nodes, shape_of(view_.nodes, first), shape_of(view_.nodes, second));
  if (!choice.feasible || choice.host_bytes_per_gpu > memory_per_gpu) return false;
  for (Slice& s : slices) s.memory_bytes = choice.host_bytes_per_gpu * s.gpus;
  pool_.take(slices);
  targets_[job] = {std::move(slices), choice.plan, choice.groups};
  started_[job] = true;
  return true;
}

void Assignment::grant_spare_cpus() {
  for (std::size_t job = 0; job < targets_.size(); ++job) {
    if (!started_[job] || !targets_[job].plan.offload) continue;
    const JobState& j = view_.jobs[job];
    JobAllocation& t = targets_[job];
    pool_.give(t.slices);
    // At most the free CPUs beyond one per idle GPU, evenly per GPU of the job.
    int max_cpus = std::numeric_limits<int>::max();
    for (const Slice& s : t.slices)
      max_cpus = std::min(max_cpus, (pool_.free_cpus(s.node) - (pool_.free_gpus(s.node) - s.gpus)) / s.gpus);
    Shape shape = shape_of(view_.nodes, t.slices);
    const int base = shape.cpus_per_gpu;
    std::vector<int> tries;  // the CPU curve flattens quickly: doublings, then all that is spare
    for (int c = base * 2; c < max_cpus; c *= 2) tries.push_back(c);
    if (max_cpus > base) tries.push_back(max_cpus);
    PlanChoice best = oracle_.best(j, freedom_[job], view_.nodes, shape);
    int best_cpus = base;
    for (int cpus : tries) {
      shape.cpus_per_gpu = cpus;
      const PlanChoice& c = oracle_.best(j, freedom_[job], view_.nodes, shape);
      if (c.feasible && c.rate() > best.rate() * 1.01) {
        best = c;
        best_cpus = cpus;
      }
    }
    bool fits = best.feasible;
    for (const Slice& s : t.slices) fits = fits && best.host_bytes_per_gpu * s.gpus <= pool_.free_memory(s.node);
    if (best_cpus != base && fits) {
      for (Slice& s : t.slices) {
        s.cpus = s.gpus * best_cpus;
        s.memory_bytes = best.host_bytes_per_gpu * s.gpus;
      }
      t.plan = best.plan;
    }
    pool_.take(t.slices);
  }
}

std::vector<Decision> Assignment::decisions() const {
  std::vector<Decision> d;
  d.reserve(targets_.size());
  for (std::size_t i = 0; i < targets_.size(); ++i) d.push_back({view_.jobs[i].id, targets_[i]});
  return d;
}

}  // namespace morph::policy
