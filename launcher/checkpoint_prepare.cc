#include "launcher/checkpoint_prepare.h"

#include <mpi.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "launcher/mpi_reshard.h"
#include "launcher/pmi_env.h"
#include "launcher/step_choice.h"
#include "libmorph/state/reshard_exec.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::launcher {
namespace {

// Every task of the step decides alike: a reshard commits only after all of them have
// joined it, so none can see the new folder while another still decides.
void reshard_in_step(const Options& o, const launch::CheckpointChoice& choice, const state::Layout& layout) {
  // Every task finds the same environment, so all of them stop here, none in MPI_Init.
  if (!has_pmi(launch::process_environment()))
    throw Error(fmt::format("resharding {} in this step needs srun --mpi=pmix (no PMI in the environment): start "
                            "the step with srun --mpi=pmix, or reshard it first with morph reshard --from {} --to {} "
                            "--layout {}",
                            choice.newest, choice.newest, choice.resume, state::to_string(layout)));
  int argc = 0;
  char** argv = nullptr;
  MPI_Init(&argc, &argv);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const MpiReshardResult r = reshard_over_mpi(MPI_COMM_WORLD, choice.newest, choice.resume, layout, o.threads, true);
  MPI_Finalize();
  if (!r.ok) throw Error(fmt::format("resharding {} failed{}", choice.newest, r.message.empty() ? "" : ": " + r.message));
  if (me == 0) std::fprintf(stderr, "morphrun: resharded %s\n", r.message.c_str());
}

// A Slurm task variable as a number; `fallback` when it is not set.
long task_variable(const launch::Environment& env, const char* name, long fallback) {
  const auto it = env.find(name);
  return it == env.end() ? fallback : parse_int(it->second, name, 0, 0xffffffffLL);
}

}  // namespace

std::optional<launch::CheckpointChoice> prepare_checkpoint(const Options& o, const launch::Environment& env,
                                                           const std::string& model, const state::Layout& layout,
                                                           bool in_slurm_step, double wait_s) {
  if (const auto chosen = env.find(launch::kCheckpointChoiceVariable); chosen != env.end())
    return launch::chosen_checkpoint(chosen->second, layout, model);
  std::optional<launch::CheckpointChoice> choice =
      in_slurm_step && task_variable(env, "SLURM_STEP_NUM_TASKS", 1) > 1
          ? step_checkpoint_choice(o.checkpoint_dir,
                                   {static_cast<std::uint32_t>(task_variable(env, "SLURM_JOB_ID", 0)),
                                    static_cast<int>(task_variable(env, "SLURM_RESTART_COUNT", 0)),
                                    static_cast<std::uint32_t>(task_variable(env, "SLURM_STEP_ID", 0))},
                                   static_cast<int>(task_variable(env, "SLURM_PROCID", 0)), layout, model, wait_s)
          : launch::choose_checkpoint(o.checkpoint_dir, layout, model);
  if (!choice || !choice->needs_reshard) return choice;
  if (in_slurm_step && o.mpi_trainer)
    throw Error(fmt::format("checkpoint {} is in layout {} and the plan needs {}; with --mpi-trainer the trainer "
                            "owns the step's MPI world, so run morphrun --driver, which reshards in a step of its own",
                            choice->newest, state::to_string(choice->index.layout), state::to_string(layout)));
  if (in_slurm_step) {
    reshard_in_step(o, *choice, layout);
  } else if (o.hosts.size() > 1) {  // each host's morphrun would write the same copy
    throw Error(fmt::format("checkpoint {} is in layout {} and the plan needs {}; with --hosts on {} hosts each "
                            "would reshard it: run morph reshard --from {} --to {} --layout {} once first",
                            choice->newest, state::to_string(choice->index.layout), state::to_string(layout),
                            o.hosts.size(), choice->newest, choice->resume, state::to_string(layout)));
  } else {
    state::ReshardOptions options;
    options.threads = o.threads;
    const state::ReshardSummary s = state::reshard_checkpoint(choice->newest, choice->resume, layout, options);
    std::fprintf(stderr, "morphrun: resharded %s -> %s (%.2f s)\n", choice->newest.c_str(), choice->resume.c_str(),
                 s.seconds);
  }
  return choice;
}

}  // namespace morph::launcher
