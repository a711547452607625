#include "launcher/mpi_reshard.h"

#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "libmorph/state/reshard_exec.h"

namespace morph::launcher {
namespace {

// True on every process when every process succeeded.
bool all_ok(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

}  // namespace

MpiReshardResult reshard_over_mpi(MPI_Comm comm, const std::string& from, const std::string& to,
                                  const state::Layout& layout, int threads, bool verify) {
  using namespace morph::state;
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  MpiReshardResult result;
  std::unique_ptr<CheckpointIndex> index;
  std::unique_ptr<OldCheckpoint> old;
  std::unique_ptr<FilePlanner> planner;
  std::unique_ptr<CheckpointStage> stage;  // process 0 only
  try {
    index = std::make_unique<CheckpointIndex>(read_index(from));
    old = std::make_unique<OldCheckpoint>(from, *index);  // sizes checked on every process
    if (verify && me == 0) old->verify_checksums(threads);
    // Each process plans only the new ranks it builds.
    std::vector<int> ranks;
    for (int r = me; r < layout.ranks(); r += size) ranks.push_back(r);
    planner = std::make_unique<FilePlanner>(index->spec, index->layout, old->headers(), layout, RankNodes{}, ranks);
    if (me == 0) stage = std::make_unique<CheckpointStage>(to, from);
  } catch (const std::exception& e) {
    result.message = e.what();
  }
  if (!all_ok(comm, result.message.empty())) return result;

  std::vector<CheckpointFile> mine;
  try {
    // The stage lives on process 0 (created before all_ok() above); all write into it.
    mine = build_files(*planner, *old, stage_folder(to), threads).files;
  } catch (const std::exception& e) {
    result.message = e.what();
  }
  if (!all_ok(comm, result.message.empty())) return result;

  // Process 0 gathers (rank, bytes, checksum) of every new file and commits.
  std::vector<std::uint64_t> flat;
  for (const CheckpointFile& f : mine) flat.insert(flat.end(), {static_cast<std::uint64_t>(f.rank), f.bytes, f.checksum});
  int count = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::vector<std::uint64_t> all;
  if (me == 0) {
    int total = 0;
    for (int p = 0; p < size; ++p) {
      displs[static_cast<std::size_t>(p)] = total;
      total += counts[static_cast<std::size_t>(p)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(flat.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T, 0, comm);
  bool committed = true;
  if (me == 0) {
    try {
      std::vector<CheckpointFile> files;
      for (std::size_t i = 0; i + 2 < all.size(); i += 3) {
        const int r = static_cast<int>(all[i]);
        files.push_back({r, rank_file_name(r), all[i + 1], all[i + 2]});
      }
      stage->commit(resharded_index(*index, layout, std::move(files)), false);  // hashed while written
      result.message = fmt::format("{} ({}) -> {} ({}) on {} processes", from, to_string(index->layout), to,
                                   to_string(layout), size);
    } catch (const std::exception& e) {
      result.message = e.what();
      committed = false;
    }
  }
  result.ok = all_ok(comm, committed);
  return result;
}

}  // namespace morph::launcher
