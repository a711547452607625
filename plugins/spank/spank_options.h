// Registers the --morph-* options with Slurm (the table is libmorph's morph_options())
// and parses their values as they arrive.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace morph::spank {

// In every context, so that the values reach slurmstepd too. Returns 0 or -1.
int register_options(spank_t sp);

}  // namespace morph::spank
