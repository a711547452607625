// morphrun in a step's task (the default): checks the plan against the allocation,
// prepares the checkpoint, renders the framework's arguments and starts one trainer
// rank (or, with --per-node, the node's ranks) under the supervisor.
#pragma once

#include "launcher/options.h"

namespace morph::launcher {

// morphrun's exit code; every refusal is one "morphrun: ..." line on stderr before
// anything starts.
int run_task(const Options& options);

}  // namespace morph::launcher
