// The CPUs and NUMA node of each rank this morphrun starts (libmorph/launch/cpu_binding.h
// over this node's hwloc topology), and binding a child to them before it execs.
#pragma once

#include <vector>

#include "libmorph/launch/cpu_binding.h"
#include "libmorph/launch/step_layout.h"

namespace morph::launcher {

// One binding per rank of `step.ranks`, in that order.
std::vector<launch::RankBinding> step_bindings(const launch::StepLayout& step);

// In the child: bind the calling process (hwloc). Throws morph::Error.
void bind_this_process(const launch::RankBinding& binding);

}  // namespace morph::launcher
