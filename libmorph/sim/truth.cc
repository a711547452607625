#include "libmorph/sim/truth.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "libmorph/artifact/artifact_rows.h"
#include "libmorph/sim/partitions.h"

namespace morph::sim {
namespace fs = std::filesystem;

std::string artifact_code(const ExecutionPlan& p) {
  if (p.tp == 1 && p.pp == 1) {
    std::string code = p.offload ? "zero-offload" : p.zero_stage > 0 ? "zero-dp" : p.checkpointing ? "gc" : "ga";
    if (p.checkpointing && (p.offload || p.zero_stage > 0)) code += "+gc";
    return code;
  }
  if (p.zero_stage > 0 || p.offload || p.checkpointing || p.pp > 9 || p.tp > 9 || p.dp > 9) return {};
  return fmt::format("{}{}{}", p.pp, p.tp, p.dp);
}

std::string placement_code(std::vector<int> gpus_per_node) {
  std::sort(gpus_per_node.begin(), gpus_per_node.end());
  std::string code;
  for (int g : gpus_per_node) {
    if (g < 1 || g > 9) return {};
    code += static_cast<char>('0' + g);
  }
  return code;
}

TraceTruth TraceTruth::load(const std::string& dir, const std::map<std::string, ArtifactWorkload>& apps,
                            const ArtifactSpec& spec, const Cluster& cluster) {
  TraceTruth t;
  for (const auto& [name, workload] : apps) {
    const fs::path file = fs::path(dir) / name / "placements.csv";
    if (!fs::exists(file)) continue;
    for (const ArtifactRow& r : read_trace(file.string(), workload, spec, cluster)) {
      std::vector<int> gpus;
      for (const NodeShare& n : r.allocation.nodes) gpus.push_back(n.gpus);
      t.add(name, r.allocation.nodes.front().gpu.name, r.plan, gpus, r.iter_ms / 1e3);
    }
  }
  return t;
}

void TraceTruth::add(const std::string& app, const std::string& gpu_type, const ExecutionPlan& plan,
                     const std::vector<int>& gpus_per_node, double seconds) {
  // Codes are normalised through the plan, so that "ga" and "111" name one thing.
  // A plan or placement the artifact's codes cannot name (a node of 10 GPUs or more) has
  // no key: under an empty code all of them would be one measurement.
  const std::string code = artifact_code(plan), placement = placement_code(gpus_per_node);
  if (!code.empty() && !placement.empty()) seconds_[{app, gpu_type, code + "/" + placement}] = seconds;
}

double TraceTruth::lookup(const std::string& app, const std::string& gpu_type, const ExecutionPlan& plan,
                          const std::vector<int>& gpus_per_node) const {
  const std::string code = artifact_code(plan), placement = placement_code(gpus_per_node);
  if (code.empty() || placement.empty()) return 0;
  auto it = seconds_.find({measured_app(app), gpu_type, code + "/" + placement});
  return it == seconds_.end() ? 0 : it->second;
}

}  // namespace morph::sim
