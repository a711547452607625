// A kind of node: which GPUs it carries and its CPUs, host memory and network.
#pragma once

#include <string>
#include <vector>

namespace morph {

struct NodeType {
  std::string name;
  std::string gpu;                   // GpuType name
  int gpus = 0;
  int cpus = 0;
  double host_memory_bytes = 0;
  double network_bandwidth_Bps = 0;  // effective inter-node bandwidth of all NICs together
  int nics = 1;                      // NICs, each serving gpus/nics GPUs (rail-optimised)
  double host_bandwidth_Bps = 0;     // host memory <-> all GPUs of the node, shared (offload)
  std::vector<std::string> features; // Slurm node features of these nodes (--constraint)
};

}  // namespace morph
