#include "profiler/topology_report.h"

#include <fmt/format.h>

namespace morph::hw {
namespace {

std::string pcie_text(const PcieLink& link) {
  if (link.generation == 0) {
    if (link.bandwidth_GBps > 0) return fmt::format("PCIe {:.1f} GB/s", link.bandwidth_GBps);
    return "PCIe link unknown";
  }
  return fmt::format("PCIe gen{} x{} ({:.1f} GB/s)", link.generation, link.width, link.bandwidth_GBps);
}

std::string numa_text(int numa_node) { return numa_node >= 0 ? fmt::format("NUMA {}", numa_node) : "NUMA ?"; }

std::string gpu_list(const std::vector<int>& gpus) {
  if (gpus.empty()) return "none";
  std::string out;
  for (int g : gpus) out += (out.empty() ? "GPU" : ",") + std::to_string(g);
  return out;
}

nlohmann::json pcie_json(const PcieLink& link) {
  return {{"bandwidth_GBps", link.bandwidth_GBps},
          {"generation", link.generation == 0 ? nlohmann::json() : nlohmann::json(link.generation)},
          {"width", link.width == 0 ? nlohmann::json() : nlohmann::json(link.width)}};
}

nlohmann::json optional_int(int value) { return value >= 0 ? nlohmann::json(value) : nlohmann::json(); }

}  // namespace

std::string topology_text(const Topology& t) {
  std::string out = fmt::format("{}{}: {} package{}, {} cores, {} PUs, {} NUMA node{}, {} GPU{}, {} NIC{}\n", t.source,
                                t.hostname.empty() ? "" : " (" + t.hostname + ")", t.packages, t.packages == 1 ? "" : "s",
                                t.cores, t.pus, t.numa_nodes.size(), t.numa_nodes.size() == 1 ? "" : "s", t.gpus.size(),
                                t.gpus.size() == 1 ? "" : "s", t.nics.size(), t.nics.size() == 1 ? "" : "s");
  out += "GPUs\n";
  if (t.gpus.empty()) out += "  none\n";
  for (const Gpu& g : t.gpus) {
    out += fmt::format("  GPU{} {} {}  {}  {}  CPUs {}\n", g.index, g.name, g.pci_bus_id, pcie_text(g.pcie),
                       numa_text(g.numa_node), g.cpus.empty() ? "?" : cpu_list(g.cpus));
    if (g.nvlink_peers.empty()) {
      out += "    NVLink: none\n";
      continue;
    }
    std::string peers;
    for (const NvLinkPeer& p : g.nvlink_peers)
      peers += fmt::format("{}GPU{} {:.0f} GB/s", peers.empty() ? "" : ", ", p.gpu_index, p.bandwidth_GBps);
    out += fmt::format("    NVLink{}: {}\n", g.nvlink_peers.front().via_nvswitch ? " (NVSwitch)" : "", peers);
  }
  if (t.nvswitches > 0) out += fmt::format("  NVSwitches: {}\n", t.nvswitches);
  out += "NICs\n";
  if (t.nics.empty()) out += "  none\n";
  for (const Nic& n : t.nics) {
    out += fmt::format("  {} {}{} {}  {}  {}\n", n.name, n.kind == NicKind::infiniband ? "InfiniBand" : "Ethernet",
                       n.netdevs.empty() || n.netdevs.front() == n.name ? "" : " (" + fmt::format("{}", fmt::join(n.netdevs, ",")) + ")",
                       n.pci_bus_id, pcie_text(n.pcie), numa_text(n.numa_node));
    out += fmt::format("    same PCIe switch: {}; same NUMA node: {}\n", gpu_list(n.gpus_same_switch),
                       gpu_list(n.gpus_same_numa));
  }
  out += "NUMA nodes\n";
  for (const NumaNode& n : t.numa_nodes)
    out += fmt::format("  NUMA {}  CPUs {}  {:.0f} GiB\n", n.index, cpu_list(n.cpus),
                       static_cast<double>(n.memory_bytes) / (1024.0 * 1024.0 * 1024.0));
  return out;
}

nlohmann::json topology_json(const Topology& t) {
  nlohmann::json gpus = nlohmann::json::array(), nics = nlohmann::json::array(), numa = nlohmann::json::array();
  for (const Gpu& g : t.gpus) {
    nlohmann::json peers = nlohmann::json::array();
    for (const NvLinkPeer& p : g.nvlink_peers)
      peers.push_back({{"gpu", p.gpu_index}, {"bandwidth_GBps", p.bandwidth_GBps}, {"via_nvswitch", p.via_nvswitch}});
    gpus.push_back({{"index", g.index}, {"name", g.name}, {"pci_bus_id", g.pci_bus_id}, {"pcie", pcie_json(g.pcie)},
                    {"pcie_switch", g.pcie_switch}, {"numa_node", optional_int(g.numa_node)},
                    {"cpus", cpu_list(g.cpus)}, {"nvlink_peers", peers}});
  }
  for (const Nic& n : t.nics)
    nics.push_back({{"name", n.name}, {"kind", n.kind == NicKind::infiniband ? "infiniband" : "ethernet"},
                    {"netdevs", n.netdevs}, {"pci_bus_id", n.pci_bus_id}, {"pcie", pcie_json(n.pcie)},
                    {"pcie_switch", n.pcie_switch}, {"numa_node", optional_int(n.numa_node)},
                    {"cpus", cpu_list(n.cpus)}, {"gpus_same_switch", n.gpus_same_switch},
                    {"gpus_same_numa", n.gpus_same_numa}});
  for (const NumaNode& n : t.numa_nodes)
    numa.push_back({{"index", n.index}, {"cpus", cpu_list(n.cpus)}, {"memory_bytes", n.memory_bytes}});
  return {{"source", t.source}, {"hostname", t.hostname}, {"packages", t.packages}, {"cores", t.cores},
          {"pus", t.pus},       {"nvswitches", t.nvswitches}, {"gpus", gpus}, {"nics", nics}, {"numa_nodes", numa}};
}

}  // namespace morph::hw
