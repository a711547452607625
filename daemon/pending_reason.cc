#include "daemon/pending_reason.h"

extern "C" {
#include <slurm/slurm.h>
}

namespace morph::daemon {
namespace {

// Job-count limits of the job's QOS, association or account: no plan of this job passes
// them until another job of theirs ends.
bool job_count_limit(std::uint32_t r) {
  switch (r) {
    case WAIT_ASSOC_JOB_LIMIT: case WAIT_QOS_JOB_LIMIT: case WAIT_QOS_GRP_JOB: case WAIT_QOS_MAX_JOB_PER_USER:
    case WAIT_QOS_MAX_JOB_PER_ACCT: case WAIT_ASSOC_GRP_JOB: case WAIT_ASSOC_MAX_JOBS: case WAIT_ARRAY_TASK_LIMIT:
      return true;
    default:
      return false;
  }
}

// Limits on usage already accrued (GrpTRESMins, GrpWall, a usage threshold): no plan of
// this job passes them until the usage decays or the admin resets it.
bool accrued_usage_limit(std::uint32_t r) {
  switch (r) {
    case WAIT_ASSOC_TIME_LIMIT: case WAIT_QOS_THRES: case WAIT_QOS_TIME_LIMIT: case WAIT_QOS_GRP_WALL:
    case WAIT_ASSOC_GRP_WALL:
    case WAIT_QOS_GRP_CPU_MIN: case WAIT_QOS_GRP_MEM_MIN: case WAIT_QOS_GRP_NODE_MIN: case WAIT_QOS_GRP_GRES_MIN:
    case WAIT_QOS_GRP_BILLING_MIN: case WAIT_QOS_GRP_UNK_MIN: case WAIT_QOS_GRP_ENERGY_MIN:
    case WAIT_QOS_GRP_LIC_MIN: case WAIT_QOS_GRP_BB_MIN:
    case WAIT_ASSOC_GRP_CPU_MIN: case WAIT_ASSOC_GRP_MEM_MIN: case WAIT_ASSOC_GRP_NODE_MIN:
    case WAIT_ASSOC_GRP_GRES_MIN: case WAIT_ASSOC_GRP_BILLING_MIN: case WAIT_ASSOC_GRP_UNK_MIN:
    case WAIT_ASSOC_GRP_ENERGY_MIN: case WAIT_ASSOC_GRP_LIC_MIN: case WAIT_ASSOC_GRP_BB_MIN:
      return true;
    default:
      return false;
  }
}

}  // namespace

SizeLimit size_limit(std::uint32_t r) {
  switch (r) {
    case WAIT_QOS_MAX_NODE_PER_JOB: case WAIT_ASSOC_MAX_NODE_PER_JOB:
      return SizeLimit::nodes;
    case WAIT_QOS_MAX_GRES_PER_JOB: case WAIT_ASSOC_MAX_GRES_PER_JOB:
    case WAIT_QOS_MAX_GRES_PER_NODE: case WAIT_ASSOC_MAX_GRES_PER_NODE:
    case WAIT_QOS_MAX_CPU_PER_JOB: case WAIT_ASSOC_MAX_CPU_PER_JOB:
    case WAIT_QOS_MAX_CPU_PER_NODE: case WAIT_ASSOC_MAX_CPU_PER_NODE:
    case WAIT_QOS_MAX_MEM_PER_JOB: case WAIT_ASSOC_MAX_MEM_PER_JOB:
    case WAIT_QOS_MAX_MEM_PER_NODE: case WAIT_ASSOC_MAX_MEM_PER_NODE:
      return SizeLimit::gpus;
    default:
      return SizeLimit::none;
  }
}

bool held(std::uint32_t priority, std::uint32_t state_reason) {
  return priority == 0 && state_reason != FAIL_BAD_CONSTRAINTS;
}

bool held_by_user(std::uint32_t priority, std::uint32_t state_reason, const char* state_desc) {
  return held(priority, state_reason) && state_reason == WAIT_HELD_USER &&
         (state_desc == nullptr || *state_desc == '\0');
}

std::string pending_block(bool is_held, std::uint32_t state_reason) {
  if (is_held) return "held";
  switch (state_reason) {
    case WAIT_HELD: case WAIT_HELD_USER: case WAIT_MAX_REQUEUE:
      return "held";
    case WAIT_DEPENDENCY: case WAIT_DEP_INVALID:
      return "a dependency";
    case WAIT_TIME:
      return "its begin time";
    case WAIT_PART_DOWN: case FAIL_DOWN_PARTITION:
      return "its partition (PartitionDown)";
    case WAIT_PART_INACTIVE:
      return "its partition (PartitionInactive)";
    case WAIT_RESERVATION: case WAIT_RESV_DELETED:
      return "its reservation";
    case WAIT_LICENSES:
      return "licenses";
    case WAIT_BURST_BUFFER_RESOURCE: case WAIT_BURST_BUFFER_STAGING: case FAIL_BURST_BUFFER_OP:
      return "its burst buffer";
    case FAIL_ACCOUNT: case FAIL_QOS: case WAIT_QOS: case WAIT_ACCOUNT:
      return "its account or QOS, which it may not use";
    default:
      break;
  }
  if (job_count_limit(state_reason)) return "a job-count limit of its QOS or association";
  if (accrued_usage_limit(state_reason)) return "a usage limit of its QOS or association (GrpTRESMins, GrpWall)";
  return {};
}

}  // namespace morph::daemon
