// MASTER_ADDR: an address of the node that runs rank 0 (the step's first node), never
// the login node. Its name when it resolves; otherwise the NodeAddr slurmctld has for it
// (one RPC: emulated nodes and sites whose node names are not in DNS).
#pragma once

#include <string>

namespace morph::launcher {

std::string master_address(const std::string& node, bool in_slurm);

}  // namespace morph::launcher
