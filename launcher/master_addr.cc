#include "launcher/master_addr.h"

#include <netdb.h>
#include <sys/socket.h>

extern "C" {
#include <slurm/slurm.h>
}

namespace morph::launcher {
namespace {

bool resolves(const std::string& name) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return false;
  freeaddrinfo(found);
  return true;
}

std::string slurm_node_address(const std::string& node) {
  node_info_msg_t* info = nullptr;
  if (slurm_load_node_single(&info, const_cast<char*>(node.c_str()), SHOW_ALL) != SLURM_SUCCESS || info == nullptr)
    return {};
  std::string address;
  if (info->record_count > 0 && info->node_array[0].node_addr != nullptr) address = info->node_array[0].node_addr;
  slurm_free_node_info_msg(info);
  return address;
}

}  // namespace

std::string master_address(const std::string& node, bool in_slurm) {
  if (resolves(node) || !in_slurm) return node;
  const std::string address = slurm_node_address(node);
  return address.empty() ? node : address;
}

}  // namespace morph::launcher
