// Which of Slurm's pending reasons keep a job from starting whatever GPUs morphd gives it
// (daemon/pending_reason).
#include "daemon/pending_reason.h"

extern "C" {
#include <slurm/slurm.h>
}

#include <gtest/gtest.h>

namespace morph::daemon {
namespace {

TEST(PendingReason, AJobThatAPlacementMayStartIsNotBlocked) {
  // What morphd decides (Priority, Resources), and limits that a smaller plan may pass.
  for (const std::uint32_t r : {WAIT_NO_REASON, WAIT_PRIORITY, WAIT_RESOURCES, WAIT_PART_NODE_LIMIT,
                                WAIT_PART_TIME_LIMIT, WAIT_QOS_MAX_GRES_PER_JOB, WAIT_QOS_MAX_GRES_PER_USER,
                                WAIT_ASSOC_GRP_GRES, WAIT_QOS_GRP_GRES_RUN_MIN, WAIT_QOS_MAX_NODE_PER_JOB,
                                WAIT_PN_MEM_LIMIT}) {
    EXPECT_EQ(pending_block(false, r), "") << r;
  }
}

TEST(PendingReason, HeldDependentAndTimedJobsSayWhatTheyWaitOn) {
  EXPECT_EQ(pending_block(true, WAIT_RESOURCES), "held");  // priority 0 whatever the reason
  EXPECT_EQ(pending_block(false, WAIT_HELD_USER), "held");
  EXPECT_EQ(pending_block(false, WAIT_MAX_REQUEUE), "held");
  EXPECT_EQ(pending_block(false, WAIT_DEPENDENCY), "a dependency");
  EXPECT_EQ(pending_block(false, WAIT_DEP_INVALID), "a dependency");
  EXPECT_EQ(pending_block(false, WAIT_TIME), "its begin time");
}

// Slurm zeroes the priority of a job whose record no node satisfies (job_scheduler.c)
// without holding it: such a job is planned again, where it used to be left out as held.
TEST(PendingReason, PriorityZeroIsAHoldUnlessSlurmFoundTheRecordUnsatisfiable) {
  EXPECT_TRUE(held(0, WAIT_HELD));
  EXPECT_TRUE(held(0, WAIT_HELD_USER));
  EXPECT_TRUE(held(0, WAIT_MAX_REQUEUE));
  EXPECT_TRUE(held(0, WAIT_NO_REASON));  // a running job its user held
  EXPECT_FALSE(held(0, FAIL_BAD_CONSTRAINTS));
  EXPECT_EQ(pending_block(held(0, FAIL_BAD_CONSTRAINTS), FAIL_BAD_CONSTRAINTS), "");
  EXPECT_FALSE(held(1000, WAIT_PRIORITY));
}

// As slurmctld 22.05 showed them on the local cluster (tests/cluster/slurm_integration.bats,
// "Slurm keeps one hold"): a user's hold, root's priority 0 over it, root's requeue-hold.
TEST(PendingReason, OnlyAUsersOwnHoldIsTheUsers) {
  EXPECT_TRUE(held_by_user(0, WAIT_HELD_USER, nullptr));
  EXPECT_TRUE(held_by_user(0, WAIT_HELD_USER, ""));
  EXPECT_FALSE(held_by_user(0, WAIT_HELD, nullptr));
  EXPECT_FALSE(held_by_user(0, WAIT_HELD_USER, "job requeued in held state"));
  EXPECT_FALSE(held_by_user(1000, WAIT_HELD_USER, nullptr));  // released: the reason lingers
}

TEST(PendingReason, PartitionsReservationsAndAccountLimitsBlock) {
  EXPECT_EQ(pending_block(false, WAIT_PART_DOWN), "its partition (PartitionDown)");
  EXPECT_EQ(pending_block(false, WAIT_PART_INACTIVE), "its partition (PartitionInactive)");
  EXPECT_EQ(pending_block(false, WAIT_RESERVATION), "its reservation");
  EXPECT_EQ(pending_block(false, WAIT_LICENSES), "licenses");
  EXPECT_EQ(pending_block(false, WAIT_QOS), "its account or QOS, which it may not use");
  for (const std::uint32_t r : {WAIT_QOS_MAX_JOB_PER_USER, WAIT_ASSOC_GRP_JOB, WAIT_ASSOC_MAX_JOBS,
                                WAIT_QOS_MAX_JOB_PER_ACCT, WAIT_ARRAY_TASK_LIMIT})
    EXPECT_EQ(pending_block(false, r), "a job-count limit of its QOS or association") << r;
  for (const std::uint32_t r : {WAIT_QOS_GRP_GRES_MIN, WAIT_ASSOC_GRP_CPU_MIN, WAIT_QOS_GRP_WALL, WAIT_QOS_THRES})
    EXPECT_EQ(pending_block(false, r), "a usage limit of its QOS or association (GrpTRESMins, GrpWall)") << r;
}

// Limits of one job's size leave it in the view, and say which of its sizes to lower.
TEST(PendingReason, SizeLimitsSayWhetherGpusOrNodesAreTooMany) {
  for (const std::uint32_t r : {WAIT_QOS_MAX_GRES_PER_JOB, WAIT_ASSOC_MAX_GRES_PER_JOB, WAIT_QOS_MAX_GRES_PER_NODE,
                                WAIT_QOS_MAX_CPU_PER_JOB, WAIT_ASSOC_MAX_MEM_PER_JOB}) {
    EXPECT_EQ(size_limit(r), SizeLimit::gpus) << r;
    EXPECT_EQ(pending_block(false, r), "") << r;
  }
  for (const std::uint32_t r : {WAIT_QOS_MAX_NODE_PER_JOB, WAIT_ASSOC_MAX_NODE_PER_JOB}) {
    EXPECT_EQ(size_limit(r), SizeLimit::nodes) << r;
    EXPECT_EQ(pending_block(false, r), "") << r;
  }
  // Not a size of the job alone: the user's jobs together (they end), the group's, a
  // partition's node limit (also below MinNodes; morphd reads partitions).
  for (const std::uint32_t r : {WAIT_RESOURCES, WAIT_PRIORITY, WAIT_QOS_GRP_GRES, WAIT_DEPENDENCY, WAIT_QOS_MAX_GRES_PER_USER,
                                WAIT_QOS_MAX_NODE_PER_USER, WAIT_PART_NODE_LIMIT})
    EXPECT_EQ(size_limit(r), SizeLimit::none) << r;
}

}  // namespace
}  // namespace morph::daemon
