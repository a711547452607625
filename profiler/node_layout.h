// Which node each MPI rank runs on, and the communicators of one node and of one rank per node.
#pragma once

#include <string>
#include <vector>

#include <mpi.h>

namespace morph::hw {

struct NodeLayout {
  std::vector<std::string> node_names;    // in order of their lowest world rank
  std::vector<std::vector<int>> node_ranks;  // world ranks on each node, ascending
  int node = 0;                           // this rank's node
  int local_rank = 0;                     // rank inside its node
  MPI_Comm node_comm = MPI_COMM_NULL;     // the ranks of this node
  MPI_Comm leaders_comm = MPI_COMM_NULL;  // local rank 0 of every node; MPI_COMM_NULL elsewhere
};

// SLURMD_NODENAME when set (emulated Slurm nodes share one host), else the processor name.
std::string this_node_name();

// Collective over world. World rank 0 is local rank 0 of node 0.
NodeLayout group_ranks_by_node(MPI_Comm world);

void free_layout(NodeLayout& layout);

}  // namespace morph::hw
