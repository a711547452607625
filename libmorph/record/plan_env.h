// The plan of a job as environment variables for its tasks (spank_morph exports them,
// morphrun and training scripts read them).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "libmorph/record/job_record.h"

namespace morph {

// MORPH_PLAN (one-line form), MORPH_DP, MORPH_TP, MORPH_PP, MORPH_ZERO, MORPH_OFFLOAD,
// MORPH_GC, MORPH_MICRO_BATCH (samples per micro-batch), MORPH_MICRO_BATCHES,
// MORPH_GLOBAL_BATCH, MORPH_MODEL, MORPH_SEQ, MORPH_FRAMEWORK, MORPH_LOCAL_BATCH (samples
// a worker processes per accumulation step), MORPH_GPU_TYPE ("a100-80g+v100-32g" when
// heterogeneous), MORPH_NODES, MORPH_GPUS_PER_NODE; then MORPH_GA for a homogeneous
// placement, MORPH_GPU_GROUPS (record/gpu_groups.h) for a heterogeneous one, whose GA
// morphrun sets per rank (launch/rank_env.h).
std::vector<std::pair<std::string, std::string>> plan_environment(const JobRecord& record);

// The variables plan_environment sets for some records only (MORPH_GA, MORPH_GPU_GROUPS,
// MORPH_ADAPTIVE_BATCH) that it does not set for `record`: whoever exports its plan over
// an environment that may hold another plan's (a nested job's, a job replanned in place)
// removes these, lest its tasks see a GPU split or batch bounds that are not theirs.
std::vector<std::string> plan_variables_not_set(const JobRecord& record);

}  // namespace morph
