// morphrun: starts a training program under its job's execution plan. See morphrun(1).
//
//   srun [--mpi=pmix] morphrun [--framework megatron|deepspeed|torch] [--checkpoint DIR] -- COMMAND [ARGS]
//   morphrun --driver [...] -- COMMAND [ARGS]        (in the batch script)
#include <cstdio>
#include <exception>
#include <string>

#include "config.h"
#include "launcher/driver.h"
#include "launcher/options.h"
#include "launcher/supervisor.h"
#include "launcher/task.h"
#include "libmorph/request/limits.h"
#include "libmorph/util/error.h"
#include "tools/command_line/command_line.h"

int main(int argc, char** argv) {
  morph::launcher::Options o;
  morph::command_line::Program app("morphrun", "morphrun: run a training program under its Slurm job's Morph plan");
  app.version(PACKAGE_STRING);
  app.option("--framework", o.framework,
             "megatron, deepspeed, torch or a site's share/frameworks/NAME.json "
             "(default: the job's --morph-framework, else torch)");
  app.option("--frameworks-dir", o.frameworks_dir,
             "rule files (default: $MORPH_FRAMEWORKS, then " MORPH_PKGDATADIR "/frameworks)");
  app.option("--plan", o.plan, "dp=..,tp=..,pp=..,zero=.. when the job has no Morph record (plain srun, tests)");
  app.option("--seq", o.seq, "with --plan: the sequence length a framework's rule passes as {seq}")
      .range(std::int64_t{1}, std::int64_t{MORPH_MAX_SEQ});
  app.option("--hosts", o.hosts, "outside Slurm: the nodes, rank 0's first").delimiter(',');
  app.option("--node-rank", o.node_rank, "outside Slurm: this host's index in --hosts");
  app.flag("--per-node", o.per_node, "one task per node starting one rank per GPU");
  app.option("--checkpoint", o.checkpoint_dir,
             "the job's checkpoint folder: resume from its newest checkpoint, resharded to the plan when needed");
  app.option("--metrics", o.metrics_file, "the job's metrics file (default: $SLURM_SUBMIT_DIR/morph-JOBID.metrics)");
  app.config(o.config_path);
  app.flag("--mpi-trainer", o.mpi_trainer, "the trainer is an MPI program of this step (morphrun leaves MPI to it)");
  app.flag("--driver", o.driver, "run in the batch script: start the step, restart it in place on a new plan");
  app.option("--mpi", o.srun_mpi, "--driver: srun's --mpi type for the steps (default pmix; none: not given)");
  app.option("--threads", o.threads, "threads per process for a reshard (0: one per core)");
  app.option("command", o.command, "the trainer and its arguments, after --").required();
  // A command line it cannot take starts nothing: 78, as every refusal (--help: 0).
  if (const std::optional<int> status = app.parse(argc, argv))
    return *status == 0 ? 0 : morph::launcher::kExitRefuse;
  if (const std::string why = o.invalid(); !why.empty()) {
    std::fprintf(stderr, "morphrun: %s\n", why.c_str());
    return morph::launcher::kExitRefuse;
  }
  try {
    return o.driver ? morph::launcher::run_driver(o) : morph::launcher::run_task(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "morphrun: %s\n", e.what());
    return morph::launcher::kExitRefuse;
  }
}
