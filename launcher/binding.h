// The CPUs and NUMA node of each rank this morphrun starts (libmorph/launch/cpu_binding.h
// over this node's hwloc topology and this task's affinity), and binding a child to them
// before it execs.
#pragma once

#include <vector>

#include "libmorph/launch/cpu_binding.h"
#include "libmorph/launch/step_layout.h"

namespace morph::launcher {

// One binding per rank of `step.ranks`, in that order; `env` holds the task's Slurm
// variables, which say how Slurm bound the step's tasks (task_bindings).
std::vector<launch::RankBinding> step_bindings(const launch::StepLayout& step, const launch::Environment& env);

// In the child: bind the calling process (hwloc). Throws morph::Error.
void bind_this_process(const launch::RankBinding& binding);

}  // namespace morph::launcher
