#include "libmorph/sim/partitions.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "libmorph/policy/partition_nodes.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::sim {
namespace {

// -p as Slurm reads it: the column joins partitions with '+'.
std::string slurm_list(const std::string& partitions) {
  std::string list = partitions;
  std::replace(list.begin(), list.end(), '+', ',');
  return list;
}

}  // namespace

SimPartitions::SimPartitions(std::vector<SlurmPartition> partitions, const std::vector<policy::NodeState>& nodes,
                             const Cluster& types)
    : partitions_(std::move(partitions)), nodes_(nodes) {
  for (const GpuType& g : types.gpu_types()) cluster_.add_gpu_type(g);
  for (const NodeType& t : types.node_types()) cluster_.add_node_type(t);
  for (const policy::NodeState& n : nodes) cluster_.add_node({n.name, n.node_type().name});
}

SimPartitions SimPartitions::read(const std::string& path, const std::vector<policy::NodeState>& nodes,
                                  const Cluster& types) {
  std::vector<SlurmPartition> partitions = read_slurm_partitions(path);
  if (partitions.empty()) throw Error(fmt::format("--partitions: {} has no PartitionName line", quote(path)));
  return SimPartitions(std::move(partitions), nodes, types);
}

const SimPartitions::Bounds& SimPartitions::bounds_of(const SimJob& job) const {
  if (auto known = bounds_.find(job.partitions); known != bounds_.end()) return known->second;
  const std::string requested = slurm_list(job.partitions);
  std::optional<PartitionBounds> part = partition_bounds(partitions_, requested);
  if (!part && requested.empty())
    throw Error(fmt::format("{}: job {} names no partition and --partitions has no Default=YES one", job.where,
                            quote(job.state.id)));
  if (!part) {
    std::string unknown;
    for (std::string_view name : split(requested, ','))
      if (std::none_of(partitions_.begin(), partitions_.end(), [&](const SlurmPartition& p) { return p.name == trim(name); }))
        unknown += (unknown.empty() ? "" : ", ") + quote(trim(name));
    throw Error(fmt::format("{}: job {}: partition {} is not in --partitions", job.where, quote(job.state.id), unknown));
  }
  Bounds b{std::move(*part), {}, most_nodes_by_gpu_type(cluster_, partitions_, requested)};
  if (!b.part.all_nodes) b.nodes_allowed = policy::partition_nodes(b.part, nodes_, cluster_);
  if (std::all_of(b.nodes_allowed.begin(), b.nodes_allowed.end(), [](bool in) { return in; }))
    b.nodes_allowed.clear();
  return bounds_.emplace(job.partitions, std::move(b)).first->second;
}

void SimPartitions::bind(std::vector<SimJob>& jobs) const {
  for (SimJob& job : jobs) {
    const Bounds& b = bounds_of(job);
    std::vector<std::string> types;
    int min_nodes = 1, max_nodes = 0;
    if (!within_partitions(b.part, cluster_, &types, &min_nodes, &max_nodes))
      throw Error(fmt::format("{}: job {}: partition {} holds none of the simulated nodes", job.where,
                              quote(job.state.id), quote(b.part.names)));
    // The most GPUs of one type the partitions let the job have, on their largest nodes:
    // a request beyond it waits forever under the policies that keep its size.
    int most_gpus = 0;
    for (const GpuType& gpu : cluster_.gpu_types()) {
      std::vector<int> sizes;
      for (std::size_t n = 0; n < nodes_.size(); ++n)
        if (nodes_[n].gpu.name == gpu.name && (b.nodes_allowed.empty() || b.nodes_allowed[n]))
          sizes.push_back(nodes_[n].type.gpus);
      std::sort(sizes.begin(), sizes.end(), std::greater<>());
      std::size_t count = sizes.size();
      if (auto most = b.nodes_of_type.find(gpu.name); most != b.nodes_of_type.end())
        count = std::min(count, static_cast<std::size_t>(most->second));
      if (max_nodes > 0) count = std::min(count, static_cast<std::size_t>(max_nodes));
      int gpus = 0;
      for (std::size_t k = 0; k < count; ++k) gpus += sizes[k];
      most_gpus = std::max(most_gpus, gpus);
    }
    const int requested = job.state.requested_plan.gpus();
    if (requested > most_gpus)
      throw Error(fmt::format("{}: job {} requests {} GPUs; partition {} lets a job have at most {}", job.where,
                              quote(job.state.id), requested, quote(b.part.names), most_gpus));
    const bool bounded = !b.nodes_allowed.empty() || !b.nodes_of_type.empty() || !types.empty() || min_nodes > 1 ||
                         max_nodes > 0 || !b.part.each.empty();
    job.state.nodes_allowed = b.nodes_allowed;
    if (bounded) job.state.app = measured_app(job.state.app) + ":p" + job.partitions;
  }
}

std::map<std::string, policy::AppProfile> SimPartitions::with_bound_apps(
    std::map<std::string, policy::AppProfile> profiles, const std::vector<SimJob>& jobs) const {
  for (const SimJob& job : jobs) {
    const std::string& app = job.state.app;
    if (profiles.count(app)) continue;
    policy::AppProfile profile = profiles.at(measured_app(app));
    const Bounds& b = bounds_of(job);
    within_partitions(b.part, cluster_, &profile.gpu_types, &profile.min_nodes, &profile.max_nodes);
    if (profile.max_nodes > 0 && profile.min_nodes > profile.max_nodes)
      profile.min_nodes = profile.max_nodes;  // MinNodes above MaxNodes: as morphd bounds it
    profile.nodes_of_type = b.nodes_of_type;
    if (!profile.gpu_types.empty())  // only the types it may use bound it
      std::erase_if(profile.nodes_of_type, [&](const auto& most) {
        return std::find(profile.gpu_types.begin(), profile.gpu_types.end(), most.first) == profile.gpu_types.end();
      });
    profile.one_gpu_type = profile.one_gpu_type || !b.part.each.empty();
    profiles.emplace(app, std::move(profile));
  }
  return profiles;
}

std::string measured_app(const std::string& app) { return app.substr(0, app.find(':')); }

}  // namespace morph::sim
