// morph-reshard-mpi: `morph reshard` distributed over MPI ranks (launcher/mpi_reshard.h).
//
//   srun --mpi=pmix -n N morph-reshard-mpi --from DIR --to DIR --layout dp=..,tp=..,pp=..,zero=..
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "launcher/mpi_reshard.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

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
    else if (arg == "--threads") a.threads = static_cast<int>(morph::parse_int(value(), "--threads", 0, 4096));
    else if (arg == "--no-verify") a.verify = false;
    else throw morph::Error(fmt::format("unknown option {} (--from, --to, --layout, --threads, --no-verify)", arg));
  }
  if (a.from.empty() || a.to.empty() || a.layout.empty()) throw morph::Error("--from, --to and --layout are required");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  // The checkpoint signal (SIGUSR2 by default) may reach every step of a job; a reshard
  // has nothing to save and finishes instead (its result is committed atomically).
  std::signal(SIGUSR2, SIG_IGN);
  MPI_Init(&argc, &argv);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int rc = 0;
  try {
    const Args args = parse_args(argc, argv);
    const morph::state::Layout layout = morph::state::parse_layout(args.layout, "--layout");
    const morph::launcher::MpiReshardResult r =
        morph::launcher::reshard_over_mpi(MPI_COMM_WORLD, args.from, args.to, layout, args.threads, args.verify);
    if (!r.message.empty() && (!r.ok || me == 0))
      std::fprintf(r.ok ? stdout : stderr, "morph-reshard-mpi: %s%s\n", r.ok ? "" : fmt::format("process {}: ", me).c_str(),
                   r.message.c_str());
    rc = r.ok ? 0 : 1;
  } catch (const std::exception& e) {
    // Bad arguments: the same on every process, so every process stops here.
    if (me == 0) std::fprintf(stderr, "morph-reshard-mpi: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
