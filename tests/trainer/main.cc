// morph-trainer: the reference trainer for Morph's checkpoint resharding. A tiny MLP
// language model trained with tensor, pipeline and data parallelism and ZeRO 0-3 over
// MPI, saving and resuming Morph checkpoints; continuity.sh checks that a run resharded
// to another layout continues with the same losses.
//
//   mpirun -np 8 morph-trainer --layout dp=2,tp=2,pp=2,zero=1 --steps 12 --loss-log loss.txt
//
// Exit status: 0 when training reached --steps, or saved a checkpoint at --save-at or on
// --checkpoint-signal (the checkpoint is then <checkpoint-dir>/step_<N>); 1 on an error
// (one "morph-trainer: ..." line on stderr); a rank that fails alone aborts the job.
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <optional>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "tests/trainer/collective.h"
#include "tests/trainer/groups.h"
#include "tests/trainer/init.h"
#include "tests/trainer/local_state.h"
#include "tests/trainer/mpi_session.h"
#include "tests/trainer/model_spec.h"
#include "tests/trainer/options.h"
#include "tests/trainer/trainer.h"

namespace {

using namespace morph::trainer;

int run(int argc, char** argv, int rank, int size) {
  std::optional<Options> parsed;
  collectively([&] { parsed = parse_options(argc, argv, rank == 0); });
  if (!parsed) return 0;  // --help
  const Options& o = *parsed;
  morph::state::StateSpec spec;
  collectively([&] {
    if (size != o.layout.ranks())
      throw morph::Error(fmt::format("--layout {} needs {} processes, MPI has {}", morph::state::to_string(o.layout),
                                     o.layout.ranks(), size));
    spec = make_spec({o.vocab, o.hidden, o.layers, o.vocab_multiple});
    morph::state::check_layout(spec, o.layout);
  });
  const Groups groups(o.layout, rank);
  LocalState state(spec, o.layout, groups.coords());
  collectively([&] { check_against_shard_map(state, spec, o.layout, rank); });
  Trainer trainer(o, spec, groups, state);
  return trainer.run();
}

}  // namespace

int main(int argc, char** argv) {
  morph::trainer::begin_mpi(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  try {
    rc = run(argc, argv, rank, size);
  } catch (const PeerFailure&) {
    rc = 1;
  } catch (const CollectiveError& e) {
    std::fprintf(stderr, "morph-trainer: %s%s\n", rank == 0 ? "" : fmt::format("rank {}: ", rank).c_str(), e.what());
    rc = 1;
  } catch (const std::exception& e) {
    // Only this rank knows: the others may be waiting in a collective.
    std::fprintf(stderr, "morph-trainer: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  morph::trainer::end_mpi();
  return rc;
}
