// The hardware of one node as hwloc 2.9 sees it: GPUs, their PCIe links and NVLink peers,
// NUMA nodes, NICs and InfiniBand HCAs with the GPUs near each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libmorph/launch/cpu_binding.h"
#include "profiler/pcie_link.h"

namespace morph::hw {

struct NvLinkPeer {
  int gpu_index = 0;
  double bandwidth_GBps = 0;  // unidirectional, summed over links (and over NVSwitches)
  bool via_nvswitch = false;
};

struct Gpu {
  int index = 0;            // CUDA/NVML number (cudaN, nvmlN), else discovery order
  std::string name;         // GPUModel, else the PCI device name
  std::string pci_bus_id;   // 0000:13:00.0
  PcieLink pcie;            // link to the host
  std::string pcie_switch;  // bus id of the root port above it: devices that share one share a switch
  int numa_node = -1;
  std::vector<int> cpus;    // PUs local to the GPU (OS indices)
  std::vector<NvLinkPeer> nvlink_peers;
};

enum class NicKind { infiniband, ethernet };

struct Nic {
  std::string name;                 // mlx5_0 (OpenFabrics) or the network interface
  NicKind kind = NicKind::ethernet;
  std::vector<std::string> netdevs; // network interfaces of the device (ib0, eth0)
  std::string pci_bus_id;
  PcieLink pcie;
  std::string pcie_switch;
  int numa_node = -1;
  std::vector<int> cpus;
  std::vector<int> gpus_same_switch;  // GPU indices behind the same PCIe switch
  std::vector<int> gpus_same_numa;    // GPU indices on the same NUMA node
};

struct NumaNode {
  int index = 0;
  std::vector<int> cpus;
  std::uint64_t memory_bytes = 0;
};

struct Topology {
  std::string source;  // the XML file, or "this machine"
  std::string hostname;
  int packages = 0;
  int cores = 0;
  int pus = 0;
  int nvswitches = 0;
  std::vector<NumaNode> numa_nodes;
  std::vector<Gpu> gpus;  // ascending index
  std::vector<Nic> nics;
};

// Empty path: this machine, with I/O discovery (PCI and OS devices). Otherwise an XML file
// as `lstopo --of xml` writes it. Throws morph::Error naming the file on failure.
Topology load_topology(const std::string& xml_path);

// Per GPU: its index, NUMA node and local CPUs, for launch::bind_ranks.
std::vector<launch::GpuLocality> gpu_locality(const Topology& topology);

// Binds the calling process to binding.cpus and, when numa_node >= 0, its memory to that
// NUMA node. Throws morph::Error with the CPUs or node and the system's reason.
void apply_binding(const launch::RankBinding& binding);

// "0-3,8,10-11"
std::string cpu_list(const std::vector<int>& cpus);

}  // namespace morph::hw
