#include "daemon/online_params.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/perf/perf_store.h"
#include "libmorph/util/error.h"

namespace morph::daemon {
namespace {

// The allocation as refit_points keeps it: per node, its name, the view's node type
// ("TYPE" or "TYPE~USABLE", view_builder.h) and the job's GPUs and CPUs there.
std::string allocation_to_json(const Allocation& a) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeShare& n : a.nodes)
    nodes.push_back({{"node", n.node}, {"node_type", n.node_type.name}, {"gpus", n.gpus}, {"cpus", n.cpus}});
  return nodes.dump();
}

Allocation allocation_from_json(const std::string& text, const Cluster& cluster) {
  const nlohmann::json nodes = nlohmann::json::parse(text, nullptr, false);
  if (!nodes.is_array() || nodes.empty()) throw Error("its allocation is not a JSON array of nodes");
  Allocation a;
  for (const nlohmann::json& n : nodes) {
    if (!n.is_object() || !n.contains("node_type") || !n["node_type"].is_string() || !n.contains("gpus") ||
        !n["gpus"].is_number_integer() || !n.contains("cpus") || !n["cpus"].is_number_integer())
      throw Error(fmt::format("its allocation's node {} lacks node_type, gpus or cpus", n.dump()));
    NodeShare share;
    share.node = n.value("node", "");
    const std::string type = n["node_type"].get<std::string>();
    const NodeType* base = usable_capacity_of(type, cluster, &share.node_type);
    if (base == nullptr) throw Error(fmt::format("node type {} is not one of morph.conf", type));
    share.gpu = cluster.gpu_of(*base);
    share.gpus = n["gpus"].get<int>();
    share.cpus = n["cpus"].get<int>();
    if (share.gpus < 1 || share.gpus > share.node_type.gpus || share.cpus < 0)
      throw Error(fmt::format("{} GPUs and {} CPUs do not fit a node of type {}", share.gpus, share.cpus, type));
    a.nodes.push_back(std::move(share));
  }
  return a;
}

}  // namespace

void record_refit(store::StateStore& state, const policy::ModelRefit& refit, double now_s) {
  state.record_fitted_params({refit.model, perf_model_to_json(refit.model, refit.perf), kOnlineRefitSource,
                              static_cast<std::int64_t>(std::floor(now_s)), refit.rmsle});
}

std::map<std::string, PerfModel> load_online_refits(const store::StateStore& state, const Catalog& catalog) {
  std::map<std::string, PerfModel> refits;
  for (const ModelSpec& model : catalog.models()) {
    const std::optional<store::FittedParams> fit = state.latest_params(model.name);
    if (!fit || fit->source != kOnlineRefitSource) continue;
    refits[model.name] = perf_model_from_json(
        fit->params_json, fmt::format("{}: fitted parameters of {}", state.path(), model.name), nullptr);
  }
  return refits;
}

void record_refit_points(store::StateStore& state, std::span<const policy::RefitPoint> points, double now_s,
                         double max_age_s) {
  std::vector<store::RefitPointRow> rows;
  for (const policy::RefitPoint& p : points)
    rows.push_back({p.model, p.app, policy::configuration_key(p), p.job, p.workload.global_batch, p.workload.seq_len,
                    to_string(p.plan), allocation_to_json(p.allocation), p.iteration_s, now_s});
  if (!rows.empty()) state.record_refit_points(rows, policy::ModelRefitter::kJobsPerConfiguration);
  if (max_age_s > 0) state.expire_refit_points(now_s - max_age_s);
}

void RefitRecorder::add(std::vector<policy::RefitPoint> points, std::vector<policy::ModelRefit> refits, double now_s) {
  if (points.empty() && refits.empty()) return;
  rounds_.push_back({std::move(points), std::move(refits), now_s});
  while (rounds_.size() > kMaxRounds) rounds_.pop_front();
}

void RefitRecorder::store(store::StateStore& state, double max_age_s) {
  while (!rounds_.empty()) {
    Round& r = rounds_.front();
    if (!r.points.empty()) {
      record_refit_points(state, r.points, r.now_s, max_age_s);
      r.points.clear();
    }
    while (!r.refits.empty()) {
      record_refit(state, r.refits.front(), r.now_s);
      r.refits.erase(r.refits.begin());
    }
    rounds_.pop_front();
  }
}

std::vector<policy::RefitPoint> load_refit_points(const store::StateStore& state, const ViewContext& context,
                                                  std::vector<std::string>* skipped, std::string_view model) {
  std::vector<policy::RefitPoint> points;
  std::map<std::pair<std::string, std::int64_t>, ForwardModel> forwards;  // by model and sequence length
  for (const store::RefitPointRow& row : state.refit_points()) {
    if (!model.empty() && row.model != model) continue;
    const std::string what = fmt::format("{}: refit point of job {} ({})", state.path(), row.job, row.configuration);
    try {
      policy::RefitPoint p;
      p.model = row.model;
      p.app = row.app;
      p.job = row.job;
      p.workload = Workload{context.catalog.resolve(row.model, "its model"), row.global_batch, row.seq_len};
      const auto key = std::make_pair(row.model, row.seq_len);
      if (!forwards.count(key)) forwards[key] = model_in_use(p.workload.model, row.seq_len, context).forward;
      p.forward = forwards.at(key);
      p.plan = parse_plan(row.plan, "its plan");
      p.allocation = allocation_from_json(row.allocation, context.config.cluster);
      if (p.allocation.gpus() != p.plan.gpus())
        throw Error(fmt::format("its allocation holds {} GPUs, its plan uses {}", p.allocation.gpus(), p.plan.gpus()));
      p.iteration_s = row.iteration_s;
      p.measured_at_s = row.recorded_at;
      points.push_back(std::move(p));
    } catch (const Error& e) {
      if (skipped != nullptr) skipped->push_back(fmt::format("{}: left out: {}", what, e.what()));
    }
  }
  return points;
}

}  // namespace morph::daemon
