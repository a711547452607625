#include "libmorph/policy/alternatives.h"

#include <algorithm>
#include <array>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::policy {
namespace {

constexpr std::array kLossNames = {"chosen",     "infeasible", "no_room", "below_promise", "unmeasured",
                                   "held_to_request", "slower", "small_gain", "outvalued"};
static_assert(kLossNames.size() == static_cast<std::size_t>(Loss::outvalued) + 1);

void set_speed(Alternative& a, double iteration_s, std::int64_t global_batch) {
  a.iteration_s = iteration_s > 0 ? iteration_s : 0;
  a.samples_per_s = iteration_s > 0 ? static_cast<double>(global_batch) / iteration_s : 0;
}

// Fastest first; ties by GPU type, GPU count and plan, so that the order is total.
bool faster(const Alternative& a, const Alternative& b) {
  return std::tie(b.samples_per_s, a.gpu_type, a.gpus, a.plan) < std::tie(a.samples_per_s, b.gpu_type, b.gpus, b.plan);
}

// A node of each GPU type with the most GPUs (a whole node where one is free): the
// curves and packed shapes are taken on its node type.
std::map<std::string, int> node_per_gpu_type(const std::vector<NodeState>& nodes) {
  std::map<std::string, int> out;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const auto [it, fresh] = out.try_emplace(nodes[static_cast<std::size_t>(i)].gpu.name, i);
    if (!fresh && nodes[static_cast<std::size_t>(i)].type.gpus > nodes[static_cast<std::size_t>(it->second)].type.gpus)
      it->second = i;
  }
  return out;
}

// What the loss rules need to know of the job and its chosen configuration.
struct Judge {
  const ClusterView& view;
  const JobState& job;
  const JobAllocation& target;
  const FreeGpus& free;
  PlanOracle& oracle;
  double chosen_rate = 0;  // iterations/s; 0: none chosen

  // GPUs of `type` the job could have: the free ones and those its own target holds.
  int room(const std::string& type) const {
    const auto f = free.find(type);
    int gpus = f == free.end() ? 0 : f->second;
    for (const Slice& s : target.slices)
      if (view.nodes.at(static_cast<std::size_t>(s.node)).gpu.name == type) gpus += s.gpus;
    return gpus;
  }

  void rule(Alternative& a, const PlanChoice& choice, int node) const {
    auto lose = [&](Loss loss, std::string why) {
      a.loss = loss;
      a.why = std::move(why);
    };
    const double batch = static_cast<double>(job.workload.global_batch);
    if (!choice.feasible) return lose(Loss::infeasible, choice.reason);
    if (const int r = room(a.gpu_type); a.gpus > r) return lose(Loss::no_room, fmt::format("needs {} GPUs, {} free", a.gpus, r));
    const double rate = choice.rate();
    if (job.sla == Sla::guaranteed) {
      const double promise = job.promised_iteration_s > 0 ? 1 / job.promised_iteration_s
                                                          : oracle.requested_rate(job, view.nodes, node);
      if (promise > 0 && rate < promise * (1 - 1e-9))
        return lose(Loss::below_promise,
                    fmt::format("below the guaranteed promise of {:.2f} samples/s", promise * batch));
      const bool request = a.gpus == job.requested_plan.gpus() && choice.plan == job.requested_plan;
      if (!request && job.held_to_request)
        return lose(Loss::held_to_request, "held to its request: a configuration Morph chose measured slower");
      if (!request && job.promised_iteration_s <= 0)
        return lose(Loss::unmeasured, "a guaranteed job runs its request until its speed there is measured");
    }
    if (chosen_rate > 0) {
      const double gain = rate / chosen_rate - 1;
      if (gain <= 1e-9) return lose(Loss::slower, fmt::format("{:.1f}% slower than the chosen", -100 * gain));
      if (job.running() && target == job.current && gain < view.min_reconfigure_gain)
        return lose(Loss::small_gain, fmt::format("{:.1f}% faster, under MinReconfigureGain {:.0f}%", 100 * gain,
                                                  100 * view.min_reconfigure_gain));
      return lose(Loss::outvalued,
                  fmt::format("{:.1f}% faster, but the policy valued the GPUs more elsewhere", 100 * gain));
    }
    lose(Loss::outvalued, "fits, but the policy valued the GPUs more elsewhere");
  }
};

// The best of each GPU type, then the fastest of the rest, at most kMaxAlternatives.
std::vector<Alternative> keep_best(std::vector<Alternative> all) {
  std::sort(all.begin(), all.end(), faster);
  std::vector<Alternative> kept;
  std::vector<bool> taken(all.size(), false);
  for (std::size_t i = 0; i < all.size() && kept.size() < kMaxAlternatives; ++i) {
    const bool first_of_type =
        std::none_of(kept.begin(), kept.end(), [&](const Alternative& k) { return k.gpu_type == all[i].gpu_type; });
    if (!first_of_type) continue;
    kept.push_back(all[i]);
    taken[i] = true;
  }
  for (std::size_t i = 0; i < all.size() && kept.size() < kMaxAlternatives; ++i)
    if (!taken[i]) kept.push_back(all[i]);
  std::sort(kept.begin(), kept.end(), faster);
  return kept;
}

}  // namespace

const char* to_string(Loss loss) { return kLossNames.at(static_cast<std::size_t>(loss)); }

Loss parse_loss(std::string_view text, std::string_view what) {
  for (std::size_t i = 0; i < kLossNames.size(); ++i)
    if (text == kLossNames[i]) return static_cast<Loss>(i);
  throw Error(fmt::format("{}: unknown outcome {}", what, quote(text)));
}

FreeGpus free_gpus(const ClusterView& view, const std::vector<Decision>& decisions) {
  FreeGpus free;
  for (const NodeState& n : view.nodes) free[n.gpu.name] += n.type.gpus;
  for (const Decision& d : decisions)
    for (const Slice& s : d.target.slices) free[view.nodes.at(static_cast<std::size_t>(s.node)).gpu.name] -= s.gpus;
  return free;
}

std::vector<Alternative> alternatives(const ClusterView& view, std::size_t job, const JobAllocation& target,
                                      const FreeGpus& free, PlanOracle& oracle) {
  const JobState& j = view.jobs.at(job);
  Judge judge{view, j, target, free, oracle};
  std::vector<Alternative> out;
  if (!target.empty()) {
    Alternative chosen;
    chosen.gpu_type = target.groups.empty()
                          ? view.nodes.at(static_cast<std::size_t>(target.slices.front().node)).gpu.name
                          : group_types(target.groups);
    chosen.gpus = target.gpus();
    chosen.plan = to_string(target.plan);
    if (!target.groups.empty()) chosen.plan += " groups=" + to_string(target.groups);
    set_speed(chosen, oracle.predict_s(j, target.plan, view.nodes, target.slices, target.groups),
              j.workload.global_batch);
    judge.chosen_rate = chosen.iteration_s > 0 ? 1 / chosen.iteration_s : 0;
    out.push_back(std::move(chosen));
  }
  std::vector<Alternative> others;
  for (const auto& [type, node] : node_per_gpu_type(view.nodes)) {
    std::vector<int> counts = oracle.curve(j, PlanFreedom::any, true, view.nodes, node).useful;
    counts.push_back(j.requested_plan.gpus());
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    for (const int gpus : counts) {
      if (gpus <= 0) continue;
      const PlanChoice& choice = oracle.best(j, PlanFreedom::any, view.nodes, packed_shape(view.nodes, node, gpus));
      Alternative a;
      a.gpu_type = type;
      a.gpus = gpus;
      if (choice.feasible) {
        a.plan = to_string(choice.plan);
        set_speed(a, choice.iteration_s, j.workload.global_batch);
      }
      if (!out.empty() && a.gpu_type == out.front().gpu_type && a.gpus == out.front().gpus && a.plan == out.front().plan)
        continue;  // the chosen one
      judge.rule(a, choice, node);
      others.push_back(std::move(a));
    }
  }
  for (Alternative& a : keep_best(std::move(others))) out.push_back(std::move(a));
  return out;
}

std::string wait_reason(const std::vector<Alternative>& alternatives) {
  auto binding = std::find_if(alternatives.begin(), alternatives.end(), [](const Alternative& a) {
    return a.loss == Loss::no_room || a.loss == Loss::outvalued;
  });
  if (binding == alternatives.end()) binding = alternatives.begin();
  if (binding == alternatives.end()) return "wait: no GPU type of the cluster runs the job";
  const char* why = "";
  switch (binding->loss) {
    case Loss::infeasible: why = "runs no plan"; break;
    case Loss::no_room: why = "needs more GPUs than are free"; break;
    case Loss::below_promise: why = "would run below its guaranteed promise"; break;
    case Loss::unmeasured: why = "is not its request, which a guaranteed job runs until measured"; break;
    case Loss::held_to_request: why = "is not its request, to which it is held"; break;
    case Loss::outvalued: why = "fits, but the policy valued the GPUs more elsewhere"; break;
    case Loss::none:
    case Loss::slower:
    case Loss::small_gain: why = to_string(binding->loss); break;
  }
  return fmt::format("wait: its best configuration, {} x {}, {}", binding->gpus, binding->gpu_type, why);
}

std::string alternatives_to_json(const std::vector<Alternative>& alternatives) {
  nlohmann::json out = nlohmann::json::array();
  for (const Alternative& a : alternatives)
    out.push_back({{"gpu_type", a.gpu_type},
                   {"gpus", a.gpus},
                   {"plan", a.plan},
                   {"iteration_s", a.iteration_s},
                   {"samples_per_s", a.samples_per_s},
                   {"outcome", to_string(a.loss)},
                   {"why", a.why}});
  return out.dump();
}

std::vector<Alternative> alternatives_from_json(std::string_view json, std::string_view what) {
  std::vector<Alternative> out;
  try {
    const nlohmann::json in = nlohmann::json::parse(json);
    if (!in.is_array()) throw Error(fmt::format("{}: not a JSON array", what));
    for (const nlohmann::json& item : in) {
      Alternative a;
      a.gpu_type = item.at("gpu_type").get<std::string>();
      a.gpus = item.at("gpus").get<int>();
      a.plan = item.at("plan").get<std::string>();
      a.iteration_s = item.at("iteration_s").get<double>();
      a.samples_per_s = item.at("samples_per_s").get<double>();
      a.loss = parse_loss(item.at("outcome").get<std::string>(), what);
      a.why = item.at("why").get<std::string>();
      out.push_back(std::move(a));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: {}", what, e.what()));
  }
  return out;
}

}  // namespace morph::policy
