#include "libmorph/perf/profile_sampling.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph {
namespace {

struct Candidates {
  std::vector<ProfileConfig> offload, dp, zero_dp, tp, pp;
};

// The whole allocation, then one node's GPUs halved down to 1.
std::vector<int> gpu_ladder(const ProfileAllocation& a) {
  std::vector<int> counts{a.nodes * a.gpus_per_node};
  for (int c = a.gpus_per_node; c >= 1; c /= 2)
    if (c != counts.back()) counts.push_back(c);
  return counts;
}

std::optional<ProfileConfig> make_config(const ProfileAllocation& a, int gpus, int tp, int pp, int zero, bool offload,
                                         const ModelSpec& model, std::int64_t global_batch) {
  ProfileConfig c;
  c.nodes = gpus > a.gpus_per_node ? a.nodes : 1;
  c.gpus_per_node = gpus / c.nodes;
  if (gpus % (tp * pp) != 0 || c.gpus_per_node % tp != 0 || model.query_groups() % tp != 0 ||
      model.layers % pp != 0)
    return std::nullopt;
  c.plan.tp = tp;
  c.plan.pp = pp;
  c.plan.dp = gpus / (tp * pp);
  c.plan.zero_stage = zero;
  c.plan.offload = offload;
  if (global_batch % c.plan.dp != 0) return std::nullopt;
  return c;
}

// The largest (tp) or smallest (pp) size > 1 that makes a valid configuration on `gpus`.
std::optional<ProfileConfig> model_parallel(const ProfileAllocation& a, int gpus, bool tensor, const ModelSpec& model,
                                            std::int64_t global_batch) {
  const int most = tensor ? a.gpus_per_node : gpus;
  for (int i = 2; i <= most; ++i) {
    const int size = tensor ? most + 2 - i : i;
    if (auto c = make_config(a, gpus, tensor ? size : 1, tensor ? 1 : size, 0, false, model, global_batch)) return c;
  }
  return std::nullopt;
}

Candidates candidates(const ModelSpec& model, std::int64_t global_batch, const ProfileAllocation& a) {
  if (a.nodes < 1 || a.gpus_per_node < 1)
    throw Error(fmt::format("profile sampling: an allocation of {} nodes x {} GPUs", a.nodes, a.gpus_per_node));
  Candidates c;
  for (int gpus : gpu_ladder(a)) {
    if (auto x = make_config(a, gpus, 1, 1, 2, true, model, global_batch)) c.offload.push_back(*x);
    if (auto x = make_config(a, gpus, 1, 1, 0, false, model, global_batch)) c.dp.push_back(*x);
    if (auto x = make_config(a, gpus, 1, 1, 2, false, model, global_batch)) c.zero_dp.push_back(*x);
    if (auto x = model_parallel(a, gpus, true, model, global_batch)) c.tp.push_back(*x);
    if (auto x = model_parallel(a, gpus, false, model, global_batch)) c.pp.push_back(*x);
  }
  return c;
}

bool same(const ProfileConfig& a, const ProfileConfig& b) {
  return a.nodes == b.nodes && a.gpus_per_node == b.gpus_per_node && a.plan == b.plan;
}

void take(std::vector<ProfileConfig>& out, const std::vector<ProfileConfig>& from, std::size_t first, std::size_t last,
          std::size_t limit) {
  for (std::size_t i = first; i < std::min(last, from.size()) && out.size() < limit; ++i)
    if (std::none_of(out.begin(), out.end(), [&](const ProfileConfig& c) { return same(c, from[i]); }))
      out.push_back(from[i]);
}

// Step 5 of the rule: what fills the sample up to seven, and the held-out candidates.
std::vector<ProfileConfig> fill_order(const Candidates& c) {
  std::vector<ProfileConfig> out;
  take(out, c.dp, 2, c.dp.size(), SIZE_MAX);
  take(out, c.zero_dp, 0, c.zero_dp.size(), SIZE_MAX);
  take(out, c.tp, 1, c.tp.size(), SIZE_MAX);
  take(out, c.pp, 1, c.pp.size(), SIZE_MAX);
  return out;
}

}  // namespace

std::string describe(const ProfileConfig& c) {
  return fmt::format("dp={} tp={} pp={} zero={} offload={} on {}x{}", c.plan.dp, c.plan.tp, c.plan.pp,
                     c.plan.zero_stage, c.plan.offload ? 1 : 0, c.nodes, c.gpus_per_node);
}

std::vector<ProfileConfig> choose_profile_configs(const ModelSpec& model, std::int64_t global_batch,
                                                  const ProfileAllocation& a) {
  const Candidates c = candidates(model, global_batch, a);
  std::vector<ProfileConfig> out;
  take(out, c.offload, 0, kProfileOffloadConfigs, SIZE_MAX);
  take(out, c.dp, 0, 2, SIZE_MAX);
  take(out, c.tp, 0, 1, SIZE_MAX);
  take(out, c.pp, 0, 1, SIZE_MAX);
  take(out, fill_order(c), 0, SIZE_MAX, kProfileConfigs);
  const auto offload = std::count_if(out.begin(), out.end(), [](const ProfileConfig& x) { return x.plan.offload; });
  if (std::ssize(out) < kProfileConfigs || offload < kProfileOffloadConfigs)
    throw Error(fmt::format(
        "an allocation of {} node(s) x {} GPUs holds {} distinct valid profiling configurations, {} with "
        "ZeRO-Offload, for {} with global batch {}; at least {} are needed, {} of them with ZeRO-Offload: use more "
        "GPUs or a batch with more divisors",
        a.nodes, a.gpus_per_node, out.size(), offload, model.name.empty() ? "the model" : model.name, global_batch,
        kProfileConfigs, kProfileOffloadConfigs));
  return out;
}

std::vector<ProfileConfig> held_out_profile_configs(const ModelSpec& model, std::int64_t global_batch,
                                                    const ProfileAllocation& a,
                                                    const std::vector<ProfileConfig>& chosen, int count) {
  std::vector<ProfileConfig> out = chosen;
  take(out, fill_order(candidates(model, global_batch, a)), 0, SIZE_MAX, chosen.size() + std::max(count, 0));
  return {out.begin() + static_cast<std::ptrdiff_t>(chosen.size()), out.end()};
}

}  // namespace morph
