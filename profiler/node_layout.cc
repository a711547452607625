#include "profiler/node_layout.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace morph::hw {

std::string this_node_name() {
  if (const char* slurm = std::getenv("SLURMD_NODENAME"); slurm != nullptr && *slurm != '\0') return slurm;
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return std::string(name, static_cast<std::size_t>(length));
}

NodeLayout group_ranks_by_node(MPI_Comm world) {
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  const std::string name = this_node_name();
  std::memcpy(mine.data(), name.data(), std::min(name.size(), mine.size() - 1));
  std::vector<char> all(mine.size() * static_cast<std::size_t>(size));
  MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, world);

  NodeLayout layout;
  for (int r = 0; r < size; ++r) {
    const std::string node_name(all.data() + static_cast<std::size_t>(r) * mine.size());
    auto it = std::find(layout.node_names.begin(), layout.node_names.end(), node_name);
    if (it == layout.node_names.end()) {
      layout.node_names.push_back(node_name);
      layout.node_ranks.emplace_back();
      it = layout.node_names.end() - 1;
    }
    const auto node = static_cast<std::size_t>(it - layout.node_names.begin());
    layout.node_ranks[node].push_back(r);
    if (r == rank) layout.node = static_cast<int>(node);
  }
  MPI_Comm_split(world, layout.node, rank, &layout.node_comm);
  MPI_Comm_rank(layout.node_comm, &layout.local_rank);
  MPI_Comm_split(world, layout.local_rank == 0 ? 0 : MPI_UNDEFINED, rank, &layout.leaders_comm);
  return layout;
}

void free_layout(NodeLayout& layout) {
  if (layout.node_comm != MPI_COMM_NULL) MPI_Comm_free(&layout.node_comm);
  if (layout.leaders_comm != MPI_COMM_NULL) MPI_Comm_free(&layout.leaders_comm);
}

}  // namespace morph::hw
