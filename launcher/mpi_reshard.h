// A checkpoint resharded by every process of an MPI communicator (Tenplex §4.3): each
// plans, from the old headers, only its share of the new ranks (new rank r on process
// r mod size) and builds their files; process 0 commits once all are done. No
// process reads or writes for another. Used by morph-reshard-mpi and by morphrun.
#pragma once

#include <mpi.h>

#include <string>

#include "libmorph/state/layout.h"

namespace morph::launcher {

struct MpiReshardResult {
  bool ok = false;       // the same on every process
  std::string message;   // this process's error, or (process 0) the summary line
};

// Collective over `comm`; never throws.
MpiReshardResult reshard_over_mpi(MPI_Comm comm, const std::string& from, const std::string& to,
                                  const state::Layout& layout, int threads, bool verify);

}  // namespace morph::launcher
