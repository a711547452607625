// The state of spank_morph in one Slurm process (sbatch, salloc, srun or slurmstepd):
// its plugstack.conf arguments and the --morph-* options given to this job.
#pragma once

#include <string>

#include "libmorph/request/morph_request.h"

namespace morph::spank {

struct PluginArgs {
  std::string catalog;  // catalog=PATH: check model names in the client
  std::string conf;     // conf=PATH: check GPU type names in the client
};

struct State {
  PluginArgs args;
  MorphRequest request;
  bool any_option = false;  // a --morph-* option was given
};

State& state();

// plugstack.conf arguments: catalog=PATH conf=PATH. Strict: an unknown or repeated
// argument, or an empty path, is an error naming it.
PluginArgs parse_plugin_args(int argc, char** argv);

}  // namespace morph::spank
