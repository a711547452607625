// Remote context (slurmstepd): export the job's current plan, read from its record in
// slurmctld, to the tasks. A plan that morphd changed while the job was requeued is the
// one a restarted job sees.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

namespace morph::spank {

int export_plan(spank_t sp);

}  // namespace morph::spank
