// morphrun --driver, in the batch script: starts the training step itself (srun ...
// morphrun -- COMMAND) and restarts it in place, without a requeue, when the job's plan
// changes within its allocation or the allocation shrinks: checkpoint signal to the
// step, wait, give back nodes (shrink), reshard in a step of its own (MPI), start the
// next step under the new plan. A grow or a move needs the requeue path: it exits with
// 75 after the checkpoint (RequeueExit=75), as on the checkpoint signal.
#pragma once

#include "launcher/options.h"

namespace morph::launcher {

int run_driver(const Options& options);

}  // namespace morph::launcher
