// Errors under MPI: every rank learns whether any rank failed, and exactly one rank (the
// lowest that failed) reports, so a bad flag or file gives one line, not one per rank.
#pragma once

#include <mpi.h>

#include <exception>
#include <string>

#include "libmorph/util/error.h"

namespace morph::trainer {

// An error every rank knows about (thrown by agree() on the rank that reports it), so the
// processes can leave together instead of aborting the job.
struct CollectiveError : Error {
  using Error::Error;
};

// Thrown on the ranks that did not fail when another rank did (they stay silent).
struct PeerFailure : std::exception {
  const char* what() const noexcept override { return "another rank failed"; }
};

// Collective over `comm`: returns when `error` is empty on every rank; otherwise throws
// CollectiveError(error) on the lowest failing rank and PeerFailure on the others.
void agree(const std::string& error, MPI_Comm comm = MPI_COMM_WORLD);

// Runs `f`, then agree() on what it threw.
template <typename F>
void collectively(F&& f, MPI_Comm comm = MPI_COMM_WORLD) {
  std::string error;
  try {
    f();
  } catch (const PeerFailure&) {
    error = "another rank failed";
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  agree(error, comm);
}

}  // namespace morph::trainer
