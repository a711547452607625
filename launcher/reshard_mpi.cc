// morph-reshard-mpi: `morph reshard` distributed over MPI ranks (Tenplex §4.3). Every
// process plans the same reshard from the old headers, builds the new files of its share
// of the new ranks (new rank r on process r mod size), and process 0 commits the new
// checkpoint once all are done. No process reads or writes for another.
//
//   srun --mpi=pmix -n N morph-reshard-mpi --from DIR --to DIR --layout dp=..,tp=..,pp=..,zero=..
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "libmorph/state/reshard_exec.h"
#include "libmorph/util/error.h"

namespace {

struct Args {
  std::string from, to, layout;
  int threads = 1;
  bool verify = true;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw morph::Error(fmt::format("{} needs a value", arg));
      return argv[++i];
    };
    if (arg == "--from") a.from = value();
    else if (arg == "--to") a.to = value();
    else if (arg == "--layout") a.layout = value();
    else if (arg == "--threads") a.threads = std::stoi(value());
    else if (arg == "--no-verify") a.verify = false;
    else throw morph::Error(fmt::format("unknown option {} (--from, --to, --layout, --threads, --no-verify)", arg));
  }
  if (a.from.empty() || a.to.empty() || a.layout.empty()) throw morph::Error("--from, --to and --layout are required");
  return a;
}

// True on every process when every process succeeded.
bool all_ok(bool ok) {
  int mine = ok ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

int run(int argc, char** argv, int me, int size) {
  using namespace morph::state;
  std::string error;
  Args args;
  std::unique_ptr<CheckpointIndex> index;
  std::unique_ptr<OldCheckpoint> old;
  std::unique_ptr<ReshardPlan> plan;
  std::unique_ptr<CheckpointStage> stage;  // process 0 only
  try {
    args = parse_args(argc, argv);
    const Layout layout = parse_layout(args.layout, "--layout");
    index = std::make_unique<CheckpointIndex>(read_index(args.from));
    old = std::make_unique<OldCheckpoint>(args.from, *index);  // sizes checked on every process
    if (args.verify && me == 0) old->verify_checksums(args.threads);
    plan = std::make_unique<ReshardPlan>(plan_reshard(index->spec, index->layout, old->headers(), layout));
    if (me == 0) stage = std::make_unique<CheckpointStage>(args.to);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!all_ok(error.empty())) {
    if (!error.empty()) std::fprintf(stderr, "morph-reshard-mpi: process %d: %s\n", me, error.c_str());
    return 1;
  }

  std::vector<CheckpointFile> mine;
  try {
    std::vector<int> ranks;
    for (int r = me; r < plan->to.ranks(); r += size) ranks.push_back(r);
    // The stage lives on process 0 (created before all_ok() above); all write into it.
    mine = build_rank_files(*plan, *old, stage_folder(args.to), ranks, args.threads);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!all_ok(error.empty())) {
    if (!error.empty()) std::fprintf(stderr, "morph-reshard-mpi: process %d: %s\n", me, error.c_str());
    return 1;
  }

  // Process 0 gathers (rank, bytes, checksum) of every new file and commits.
  std::vector<std::uint64_t> flat;
  for (const CheckpointFile& f : mine) flat.insert(flat.end(), {static_cast<std::uint64_t>(f.rank), f.bytes, f.checksum});
  int count = static_cast<int>(flat.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<std::uint64_t> all;
  if (me == 0) {
    int total = 0;
    for (int p = 0; p < size; ++p) {
      displs[static_cast<std::size_t>(p)] = total;
      total += counts[static_cast<std::size_t>(p)];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(flat.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T, 0,
              MPI_COMM_WORLD);
  if (me == 0) {
    try {
      std::vector<CheckpointFile> files;
      for (std::size_t i = 0; i + 2 < all.size(); i += 3) {
        const int r = static_cast<int>(all[i]);
        files.push_back({r, rank_file_name(r), all[i + 1], all[i + 2]});
      }
      stage->commit(resharded_index(*index, *plan, std::move(files)), false);  // hashed while written
      std::printf("morph-reshard-mpi: %s (%s) -> %s (%s) on %d processes\n", args.from.c_str(),
                  to_string(plan->from).c_str(), args.to.c_str(), to_string(plan->to).c_str(), size);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "morph-reshard-mpi: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rc = run(argc, argv, me, size);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
