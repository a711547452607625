// Allocator and local contexts (sbatch, salloc, srun): check the --morph-* request as a
// whole and hand it to the controller in the job's SPANK environment.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace morph::spank {

int submit_request(spank_t sp);

}  // namespace morph::spank
