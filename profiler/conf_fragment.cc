#include "profiler/conf_fragment.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::hw {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGBps = 1e9;

// Shortest text that reads back as the same double ("80", "0.35").
std::string number(double value) { return fmt::format("{}", value); }

// Measured figures: two decimals, trailing zeros dropped, never below the parser's 0.001.
std::string measured_number(double GBps) {
  std::string text = fmt::format("{:.2f}", std::max(GBps, 0.01));
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string gpu_record(const GpuType& g, const MeasuredBandwidth& m) {
  std::string line = "GpuType=" + g.name;
  if (!g.aliases.empty()) line += " Aliases=" + join(g.aliases, ",");
  line += " MemoryGiB=" + number(g.memory_bytes / kGiB) + " Speed=" + number(g.speed) +
          " PeakTflops=" + number(g.peak_tflops) + " Link=" + to_string(g.link);
  line += " LinkBandwidthGBps=" + (m.intra ? measured_number(m.intra->GBps) : number(g.link_bandwidth_Bps / kGBps));
  line += " PcieBandwidthGBps=" + (m.pcie ? measured_number(m.pcie->GBps) : number(g.pcie_bandwidth_Bps / kGBps));
  const bool bf16 = m.compute_capability > 0 ? m.compute_capability >= kBf16ComputeCapability : g.bf16;
  if (!bf16) line += " Bf16=no";
  return line;
}

std::string node_record(const NodeType& n, const GpuType& g, const MeasuredBandwidth& m) {
  std::string line = fmt::format("NodeType={} Gpu={} Gpus={} Cpus={} MemoryGiB={}", n.name, n.gpu, n.gpus, n.cpus,
                                 number(n.host_memory_bytes / kGiB));
  line += " NetworkBandwidthGBps=" +
          (m.inter ? measured_number(m.inter->GBps) : number(n.network_bandwidth_Bps / kGBps));
  line += fmt::format(" Nics={}", n.nics);
  // Written only when it is not the default (Gpus x PcieBandwidthGBps), so that the default
  // follows a measured PCIe bandwidth.
  if (std::abs(n.host_bandwidth_Bps - n.gpus * g.pcie_bandwidth_Bps) > 1e-6 * n.host_bandwidth_Bps)
    line += " HostBandwidthGBps=" + number(n.host_bandwidth_Bps / kGBps);
  if (!n.features.empty()) line += " Features=" + join(n.features, ",");
  return line;
}

std::string comment_lines(const MeasuredBandwidth& m, const std::vector<std::string>& nodes) {
  std::string out = fmt::format("# morph.conf records measured by morph-profile bandwidth on {}.\n", join(nodes, ","));
  out += "# Replace the GpuType= and NodeType= records of the same names in morph.conf with these.\n";
  std::vector<std::string> kept;
  auto say = [&](const std::optional<MeasuredValue>& v, const char* key) {
    if (v) out += fmt::format("# Measured: {} = {}.\n", key, v->how);
    else kept.emplace_back(key);
  };
  say(m.intra, "LinkBandwidthGBps (B_intra)");
  say(m.inter, "NetworkBandwidthGBps (B_inter)");
  say(m.pcie, "PcieBandwidthGBps (B_pcie)");
  if (m.compute_capability > 0)
    out += fmt::format("# Measured: Bf16 = {} (compute capability {}.{}; bfloat16 needs {}.{}).\n",
                       m.compute_capability >= kBf16ComputeCapability ? "yes" : "no", m.compute_capability / 10,
                       m.compute_capability % 10, kBf16ComputeCapability / 10, kBf16ComputeCapability % 10);
  else
    kept.emplace_back("Bf16");
  if (!kept.empty())
    out += fmt::format("# As configured, not measured{}: {}.\n",
                       m.not_measured_reason.empty() ? "" : " (" + m.not_measured_reason + ")", join(kept, ", "));
  return out;
}

}  // namespace

std::string conf_fragment(const MorphConfig& config, const std::string& config_path,
                          const std::vector<std::string>& node_names, const MeasuredBandwidth& measured) {
  const Cluster& cluster = config.cluster;
  std::vector<const NodeType*> node_types;
  for (const std::string& node : node_names) {
    const auto record = std::find_if(cluster.nodes().begin(), cluster.nodes().end(),
                                     [&](const NodeRecord& r) { return r.name == node; });
    if (record == cluster.nodes().end())
      throw Error(fmt::format("node {} is not a NodeName of {}: cannot tell its NodeType", quote(node), config_path));
    const NodeType* type = cluster.find_node_type(record->node_type);
    if (type != nullptr && std::find(node_types.begin(), node_types.end(), type) == node_types.end())
      node_types.push_back(type);
  }
  std::vector<const GpuType*> gpu_types;
  std::vector<std::string> gpu_names;
  for (const NodeType* n : node_types)
    if (std::find(gpu_types.begin(), gpu_types.end(), &cluster.gpu_of(*n)) == gpu_types.end()) {
      gpu_types.push_back(&cluster.gpu_of(*n));
      gpu_names.push_back(cluster.gpu_of(*n).name);
    }
  // B_intra comes from the first node, B_pcie and the capability are minima over all ranks:
  // with several GPU types they describe none of them, so each GpuType keeps its own.
  MeasuredBandwidth m = measured;
  if (gpu_types.size() > 1) {
    m.intra.reset();
    m.pcie.reset();
    m.compute_capability = 0;
    m.not_measured_reason += fmt::format("{}the measured nodes have {} GPU types, {}",
                                         m.not_measured_reason.empty() ? "" : "; ", gpu_types.size(), join(gpu_names, ", "));
  }
  std::string out = comment_lines(m, node_names);
  for (const GpuType* g : gpu_types) out += gpu_record(*g, m) + '\n';
  for (const NodeType* n : node_types) out += node_record(*n, cluster.gpu_of(*n), m) + '\n';
  return out;
}

}  // namespace morph::hw
