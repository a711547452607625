// The 16-bit type a job trains in: bfloat16 where every GPU of its placement computes
// in it (GpuType Bf16=, compute capability 8.0 and later), fp16 with loss scaling else.
#pragma once

#include "libmorph/cluster/cluster.h"
#include "libmorph/record/job_record.h"

namespace morph::launch {

// Every GPU type of the placement (each group's, when heterogeneous) has Bf16=yes; a type
// the cluster does not define (a plan run on hosts outside morph.conf) counts as one that has.
bool computes_in_bf16(const Cluster& cluster, const Placement& placement);

}  // namespace morph::launch
