// AntMan (Xiao et al., OSDI 2020), multi-tenant: guaranteed jobs get the resources they
// requested, within their tenant's GPU quota, in submission order, preempting
// best-effort jobs (the most recently started first) when they must; best-effort jobs
// run opportunistically on whatever is left, in submission order, without reservations.
// A guaranteed job its tenant's quota cannot hold runs opportunistically, as a
// best-effort job does (it used to wait for ever when it asked for more than the quota).
// Anti-starvation (ours): an overdue best-effort job preempts like a guaranteed one,
// outside any quota, is not preempted, and other best-effort jobs wait behind it.
// Simplified: AntMan's GPU sharing (best-effort jobs co-located on a guaranteed job's
// GPUs at low priority) is not modelled — a GPU runs one job.
#include <algorithm>
#include <map>

#include "libmorph/policy/policies.h"
#include "libmorph/policy/rigid.h"

namespace morph::policy {
namespace {

class AntMan : public Policy {
 public:
  std::string name() const override { return "antman"; }
  std::vector<Decision> schedule(const ClusterView& view, PlanOracle& oracle) override;
  bool steady(const ClusterView& view, PlanOracle& oracle) override { return rigid_steady(view, oracle); }
};

std::vector<Decision> AntMan::schedule(const ClusterView& view, PlanOracle& oracle) {
  Assignment a(view, oracle, PlanFreedom::exact, CpuRule::requested);
  std::map<std::string, long> used;
  std::vector<std::size_t> waiting;
  auto within_quota = [&](const JobState& j, int gpus) {
    const auto quota = view.quota_gpus.find(j.tenant);
    return quota == view.quota_gpus.end() || used[j.tenant] + gpus <= quota->second;
  };
  std::vector<std::size_t> opportunistic;  // running jobs outside any quota, latest start first
  std::vector<std::size_t> running;
  for (std::size_t i = 0; i < view.jobs.size(); ++i) {
    if (!view.jobs[i].running()) {
      waiting.push_back(i);
      continue;
    }
    a.hold(i);
    running.push_back(i);
  }
  // Running guaranteed jobs take their tenant's quota in submission order.
  std::vector<std::size_t> by_submission = running;
  std::stable_sort(by_submission.begin(), by_submission.end(),
                   [&](std::size_t x, std::size_t y) { return view.jobs[x].submit_time_s < view.jobs[y].submit_time_s; });
  std::vector<bool> in_quota(view.jobs.size(), false);
  for (std::size_t i : by_submission) {
    const JobState& j = view.jobs[i];
    if (j.sla != Sla::guaranteed || !within_quota(j, j.current.gpus())) continue;
    used[j.tenant] += j.current.gpus();
    in_quota[i] = true;
  }
  for (std::size_t i : running)
    if (!in_quota[i] && !overdue(view.jobs[i], view))  // an overdue job is never preempted (anti-starvation)
      opportunistic.push_back(i);
  // Guaranteed jobs first, then overdue best-effort jobs, then the others.
  auto rank = [&](const JobState& j) { return j.sla == Sla::guaranteed ? 0 : overdue(j, view) ? 1 : 2; };
  std::stable_sort(waiting.begin(), waiting.end(), [&](std::size_t x, std::size_t y) {
    const JobState& p = view.jobs[x];
    const JobState& q = view.jobs[y];
    if (rank(p) != rank(q)) return rank(p) < rank(q);
    return p.submit_time_s < q.submit_time_s;
  });
  std::stable_sort(opportunistic.begin(), opportunistic.end(),
                   [&](std::size_t x, std::size_t y) { return view.jobs[x].ready_s > view.jobs[y].ready_s; });

  std::vector<bool> reserved(static_cast<std::size_t>(a.pool().types()), false);  // for an overdue job
  for (std::size_t i : waiting) {
    const JobState& j = view.jobs[i];
    const std::vector<int> types = rigid_types(a, oracle, i);
    if (types.empty()) continue;
    const int gpus = j.requested_plan.gpus();
    const bool quota_holds = j.sla == Sla::guaranteed && within_quota(j, gpus);
    // On any type with room and no overdue job waiting for it, before anyone is preempted.
    const bool started_free = std::any_of(types.begin(), types.end(), [&](int type) {
      return !reserved[static_cast<std::size_t>(type)] && a.start(i, type, gpus);
    });
    if (started_free && quota_holds) used[j.tenant] += gpus;
    if (started_free || rank(j) == 2 || (j.sla == Sla::guaranteed && !quota_holds && !overdue(j, view))) continue;
    // Preempt best-effort jobs on its first type until the guaranteed job fits; undo if it never does.
    const int type = types.front();
    std::vector<std::size_t> evicted;
    bool started = a.start(i, type, gpus);
    for (std::size_t k : opportunistic) {
      if (started) break;
      if (!a.placed(k) || a.pool().type_of(a.target(k).slices.front().node) != type || !frees_room_for(j, a.target(k)))
        continue;
      a.release(k);
      evicted.push_back(k);
      started = a.start(i, type, gpus);
    }
    if (started) {
      if (quota_holds) used[j.tenant] += gpus;
      continue;
    }
    for (std::size_t k : evicted) a.hold(k);
    if (j.sla != Sla::guaranteed) reserved[static_cast<std::size_t>(type)] = true;  // best-effort jobs wait behind it
  }
  return a.decisions();
}

}  // namespace

std::unique_ptr<Policy> make_antman() { return std::make_unique<AntMan>(); }

}  // namespace morph::policy
