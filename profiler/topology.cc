#include "profiler/topology.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <hwloc.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::hw {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using BitmapHandle = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

std::vector<int> bitmap_indexes(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  if (set == nullptr || hwloc_bitmap_weight(set) < 0) return out;  // infinite sets: none
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(i);
  return out;
}

std::string info(hwloc_obj_t obj, const char* name) {
  const char* value = hwloc_obj_get_info_by_name(obj, name);
  return value != nullptr ? value : "";
}

std::string bus_id(hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", a.domain, a.bus, a.dev, a.func);
}

bool is_pci_bridge(hwloc_obj_t obj) {
  return obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

// The root port above a PCI device: the topmost PCI-to-PCI bridge under its host bridge.
std::string root_port(hwloc_obj_t pci) {
  std::string top;
  for (hwloc_obj_t p = pci->parent; p != nullptr && p->type == HWLOC_OBJ_BRIDGE; p = p->parent)
    if (is_pci_bridge(p)) top = bus_id(p);
  return top;
}

// Locality of an I/O object: the CPUs and the single NUMA node of its first non-I/O ancestor.
void locality(hwloc_topology_t t, hwloc_obj_t io, std::vector<int>& cpus, int& numa_node) {
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(t, io);
  if (anchor == nullptr) return;
  cpus = bitmap_indexes(anchor->cpuset);
  if (anchor->nodeset != nullptr && hwloc_bitmap_weight(anchor->nodeset) == 1)
    numa_node = hwloc_bitmap_first(anchor->nodeset);
}

// "cuda3" -> 3; -1 when the name has another prefix.
int numbered(const char* name, std::string_view prefix) {
  if (name == nullptr || std::strncmp(name, prefix.data(), prefix.size()) != 0) return -1;
  char* end = nullptr;
  const long n = std::strtol(name + prefix.size(), &end, 10);
  return end != name + prefix.size() && *end == '\0' ? static_cast<int>(n) : -1;
}

bool is_gpu_class(unsigned class_id) { return (class_id >> 8) == 0x03; }  // display / 3D controller

TopologyHandle open_topology(const std::string& xml_path) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw Error("hwloc: cannot initialise a topology");
  TopologyHandle t(raw);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (!xml_path.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(xml_path, ec))
      throw Error(fmt::format("--topology: {}: no such file", xml_path));
    // hwloc's own parser: libxml2 would print its parse errors on stderr.
    setenv("HWLOC_LIBXML_IMPORT", "0", 0);
    if (hwloc_topology_set_xml(raw, xml_path.c_str()) != 0)
      throw Error(fmt::format("--topology: {} is not an hwloc XML topology", xml_path));
  }
  if (hwloc_topology_load(raw) != 0)
    throw Error(xml_path.empty() ? fmt::format("hwloc: cannot discover this machine: {}", std::strerror(errno))
                                 : fmt::format("--topology: {} is not an hwloc XML topology", xml_path));
  return t;
}

void read_cpus_and_numa(hwloc_topology_t t, Topology& topo) {
  topo.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  topo.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  topo.pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) != nullptr;)
    topo.numa_nodes.push_back({static_cast<int>(n->os_index), bitmap_indexes(n->cpuset), n->attr->numanode.local_memory});
}

// GPUs: display/3D PCI devices with a CUDA or NVML OS device, or NVIDIA ones without.
// Each is numbered by its CUDA device, else its NVML one, else in discovery order; where
// that gives two GPUs one number (CUDA sees fewer GPUs than NVML, as under
// CUDA_VISIBLE_DEVICES: cuda0 and another GPU's nvml0), NVML's numbers for all when each
// GPU has one, else discovery order. Returns, for the NVLink matrix, each GPU's NVML OS
// device and its number.
std::map<hwloc_obj_t, int> read_gpus(hwloc_topology_t t, Topology& topo) {
  std::vector<hwloc_obj_t> nvml_of;  // by GPU in discovery order
  std::vector<int> nvml_numbers;
  std::size_t first = topo.gpus.size();
  int next_index = 0;
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t, pci)) != nullptr;) {
    if (!is_gpu_class(pci->attr->pcidev.class_id)) continue;
    Gpu gpu;
    int cuda = -1, nvml = -1;
    hwloc_obj_t nvml_obj = nullptr;
    for (hwloc_obj_t os = pci->io_first_child; os != nullptr; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE) continue;
      if (const int n = numbered(os->name, "cuda"); n >= 0) cuda = n;
      if (const int n = numbered(os->name, "nvml"); n >= 0) nvml = n, nvml_obj = os;
      if (gpu.name.empty()) gpu.name = info(os, "GPUModel");
    }
    if (cuda < 0 && nvml < 0 && pci->attr->pcidev.vendor_id != 0x10de) continue;
    gpu.index = cuda >= 0 ? cuda : nvml >= 0 ? nvml : next_index;
    next_index = std::max(next_index, gpu.index + 1);
    if (gpu.name.empty()) gpu.name = info(pci, "PCIDevice");
    gpu.pci_bus_id = bus_id(pci);
    gpu.pcie = pcie_link_from_speed(pci->attr->pcidev.linkspeed);
    gpu.pcie_switch = root_port(pci);
    locality(t, pci, gpu.cpus, gpu.numa_node);
    nvml_of.push_back(nvml_obj);
    nvml_numbers.push_back(nvml);
    topo.gpus.push_back(std::move(gpu));
  }
  std::set<int> seen;
  bool unique = true;
  for (std::size_t i = first; i < topo.gpus.size(); ++i) unique = unique && seen.insert(topo.gpus[i].index).second;
  if (!unique) {
    const bool all_nvml = std::all_of(nvml_numbers.begin(), nvml_numbers.end(), [](int n) { return n >= 0; }) &&
                          std::set<int>(nvml_numbers.begin(), nvml_numbers.end()).size() == nvml_numbers.size();
    for (std::size_t i = first; i < topo.gpus.size(); ++i)
      topo.gpus[i].index = all_nvml ? nvml_numbers[i - first] : static_cast<int>(i - first);
  }
  std::map<hwloc_obj_t, int> nvml_objects;
  for (std::size_t i = first; i < topo.gpus.size(); ++i)
    if (nvml_of[i - first] != nullptr) nvml_objects[nvml_of[i - first]] = topo.gpus[i].index;
  std::sort(topo.gpus.begin(), topo.gpus.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return nvml_objects;
}

bool is_nvswitch(hwloc_obj_t obj) { return obj != nullptr && obj->subtype != nullptr && std::strcmp(obj->subtype, "NVSwitch") == 0; }

// hwloc 2.9 exposes NVLink only through the NVML backend: the "NVLinkBandwidth" distances
// matrix (unidirectional MB/s) between the GPUs' NVML OS devices and, on NVSwitch systems,
// the NVSwitch PCI devices (subtype "NVSwitch", heterogeneous object types). The CUDA OS
// devices carry no link information. A GPU pair is direct peers when its own entry is
// non-zero; through switches, the bandwidth is the sum over switches of min(i->s, s->j).
void read_nvlink(hwloc_topology_t t, const std::map<hwloc_obj_t, int>& nvml_objects, Topology& topo) {
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t, pci)) != nullptr;)
    if (is_nvswitch(pci)) ++topo.nvswitches;
  unsigned count = 1;
  hwloc_distances_s* matrix = nullptr;
  if (hwloc_distances_get_by_name(t, "NVLinkBandwidth", &count, &matrix, 0) != 0 || count == 0 || matrix == nullptr)
    return;
  const unsigned n = matrix->nbobjs;
  auto value_MBps = [&](unsigned i, unsigned j) { return static_cast<double>(matrix->values[i * n + j]); };
  std::vector<int> gpu_of(n, -1);
  std::vector<unsigned> switches;
  for (unsigned i = 0; i < n; ++i) {
    if (auto it = nvml_objects.find(matrix->objs[i]); it != nvml_objects.end()) gpu_of[i] = it->second;
    else if (is_nvswitch(matrix->objs[i])) switches.push_back(i);
  }
  for (Gpu& gpu : topo.gpus) {
    const auto self = std::find(gpu_of.begin(), gpu_of.end(), gpu.index);
    if (self == gpu_of.end()) continue;
    const auto i = static_cast<unsigned>(self - gpu_of.begin());
    for (unsigned j = 0; j < n; ++j) {
      if (j == i || gpu_of[j] < 0) continue;
      double via_switch_MBps = 0;
      for (unsigned s : switches) via_switch_MBps += std::min(value_MBps(i, s), value_MBps(s, j));
      if (value_MBps(i, j) > 0) gpu.nvlink_peers.push_back({gpu_of[j], value_MBps(i, j) / 1000, false});
      else if (via_switch_MBps > 0) gpu.nvlink_peers.push_back({gpu_of[j], via_switch_MBps / 1000, true});
    }
    std::sort(gpu.nvlink_peers.begin(), gpu.nvlink_peers.end(),
              [](const NvLinkPeer& a, const NvLinkPeer& b) { return a.gpu_index < b.gpu_index; });
  }
  hwloc_distances_release(t, matrix);
}

// NICs: one per PCI device with an OpenFabrics (HCA) or network OS device.
void read_nics(hwloc_topology_t t, Topology& topo) {
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t, pci)) != nullptr;) {
    Nic nic;
    std::string fabric_name;
    for (hwloc_obj_t os = pci->io_first_child; os != nullptr; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE || os->name == nullptr) continue;
      if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) fabric_name = os->name;
      else if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) nic.netdevs.emplace_back(os->name);
    }
    if (fabric_name.empty() && nic.netdevs.empty()) continue;
    const bool infiniband = !fabric_name.empty() || pci->attr->pcidev.class_id == 0x0207;
    nic.kind = infiniband ? NicKind::infiniband : NicKind::ethernet;
    nic.name = !fabric_name.empty() ? fabric_name : nic.netdevs.front();
    nic.pci_bus_id = bus_id(pci);
    nic.pcie = pcie_link_from_speed(pci->attr->pcidev.linkspeed);
    nic.pcie_switch = root_port(pci);
    locality(t, pci, nic.cpus, nic.numa_node);
    for (const Gpu& gpu : topo.gpus) {
      if (!nic.pcie_switch.empty() && gpu.pcie_switch == nic.pcie_switch) nic.gpus_same_switch.push_back(gpu.index);
      if (nic.numa_node >= 0 && gpu.numa_node == nic.numa_node) nic.gpus_same_numa.push_back(gpu.index);
    }
    topo.nics.push_back(std::move(nic));
  }
}

}  // namespace

Topology load_topology(const std::string& xml_path) {
  TopologyHandle handle = open_topology(xml_path);
  hwloc_topology_t t = handle.get();
  Topology topo;
  topo.source = xml_path.empty() ? "this machine" : xml_path;
  topo.hostname = info(hwloc_get_root_obj(t), "HostName");
  read_cpus_and_numa(t, topo);
  const std::map<hwloc_obj_t, int> nvml_objects = read_gpus(t, topo);
  read_nvlink(t, nvml_objects, topo);
  read_nics(t, topo);
  return topo;
}

std::vector<launch::GpuLocality> gpu_locality(const Topology& topology) {
  std::vector<launch::GpuLocality> out;
  for (const Gpu& gpu : topology.gpus) out.push_back({gpu.index, gpu.numa_node, gpu.cpus});
  return out;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

void apply_binding(const launch::RankBinding& binding) {
  if (binding.cpus.empty()) throw Error("CPU binding: no CPU to bind to");
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0 || hwloc_topology_load(raw) != 0) {
    if (raw != nullptr) hwloc_topology_destroy(raw);
    throw Error(fmt::format("CPU binding: hwloc cannot discover this machine: {}", std::strerror(errno)));
  }
  TopologyHandle t(raw);
  BitmapHandle cpus(hwloc_bitmap_alloc());
  for (int cpu : binding.cpus) hwloc_bitmap_set(cpus.get(), static_cast<unsigned>(cpu));
  if (hwloc_set_cpubind(raw, cpus.get(), 0) != 0)
    throw Error(fmt::format("CPU binding: cannot bind to CPUs {}: {}", cpu_list(binding.cpus), std::strerror(errno)));
  if (binding.numa_node < 0) return;
  BitmapHandle nodes(hwloc_bitmap_alloc());
  hwloc_bitmap_only(nodes.get(), static_cast<unsigned>(binding.numa_node));
  if (hwloc_set_membind(raw, nodes.get(), HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET) != 0)
    throw Error(fmt::format("CPU binding: cannot bind memory to NUMA node {}: {}", binding.numa_node,
                            std::strerror(errno)));
}

}  // namespace morph::hw
