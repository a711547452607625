// Which nodes slurmctld may start a job on, and the GPUs jobs hold of them, as morphd
// reads them from slurm_load_node (daemon/node_state).
#include "daemon/node_state.h"

extern "C" {
#include <slurm/slurm.h>
}

#include <gtest/gtest.h>

namespace morph::daemon {
namespace {

TEST(NodeState, IdleAllocatedAndMixedNodesAreUsable) {
  for (const std::uint32_t base : {NODE_STATE_IDLE, NODE_STATE_ALLOCATED, NODE_STATE_MIXED})
    EXPECT_TRUE(usable(base)) << base;
  EXPECT_TRUE(usable(NODE_STATE_MIXED | NODE_STATE_COMPLETING));  // an epilog runs: others may start
}

TEST(NodeState, DownDrainedAndFailingNodesAreNot) {
  for (const std::uint32_t base : {NODE_STATE_DOWN, NODE_STATE_FUTURE, NODE_STATE_UNKNOWN})
    EXPECT_FALSE(usable(base)) << base;
  for (const std::uint64_t flag : {NODE_STATE_DRAIN, NODE_STATE_FAIL, NODE_STATE_NO_RESPOND})
    EXPECT_FALSE(usable(NODE_STATE_IDLE | static_cast<std::uint32_t>(flag))) << flag;
}

// slurmctld takes a node out of avail_node_bitmap while it powers down (power_save.c),
// and while it reboots (REBOOT_ISSUED, down), and make_node_avail() keeps a powering-down
// node out: it starts no job there. Such nodes counted as usable, and morphd planned onto
// them.
TEST(NodeState, ANodePoweringDownOrRebootingIsNotUsable) {
  EXPECT_FALSE(usable(NODE_STATE_IDLE | NODE_STATE_POWERING_DOWN));
  EXPECT_FALSE(usable(NODE_STATE_IDLE | NODE_STATE_REBOOT_ISSUED));
  EXPECT_FALSE(usable(NODE_STATE_DOWN | NODE_STATE_REBOOT_ISSUED));
  // Powering up: slurmctld sets NO_RESPOND until slurmd registers.
  EXPECT_FALSE(usable(NODE_STATE_IDLE | NODE_STATE_POWERING_UP | NODE_STATE_NO_RESPOND));
}

// Asked to reboot or power down once idle (`scontrol reboot`, `scontrol power down`,
// without ASAP, which drains it), a busy node still takes Slurm's jobs, but no new GPUs of
// Morph's: its jobs grow into every GPU that frees up and would keep it from ever being idle.
TEST(NodeState, ANodeToRebootOrPowerDownOnceIdleGetsNoNewMorphGpus) {
  EXPECT_FALSE(usable(NODE_STATE_MIXED | NODE_STATE_REBOOT_REQUESTED));
  EXPECT_FALSE(usable(NODE_STATE_MIXED | NODE_STATE_POWER_DOWN));
  EXPECT_FALSE(usable(NODE_STATE_IDLE | NODE_STATE_POWER_DOWN));  // out of avail_node_bitmap
  EXPECT_FALSE(usable(NODE_STATE_IDLE | NODE_STATE_REBOOT_REQUESTED | NODE_STATE_DRAIN));  // ASAP
}

// Powered down by power saving, a node is Slurm's to resume for the job it starts there
// (node_scheduler.c gives such nodes a higher weight, not a refusal).
TEST(NodeState, ANodePoweredDownByPowerSavingIsUsable) {
  EXPECT_TRUE(usable(NODE_STATE_IDLE | NODE_STATE_POWERED_DOWN));
}

// A reservation keeps a node from the jobs outside it, not from its own (reservations.h):
// the node states it sets (RES, MAINT) are not morphd's to read.
TEST(NodeState, AReservedNodeIsUsableForItsReservationsJobs) {
  EXPECT_TRUE(usable(NODE_STATE_IDLE | NODE_STATE_RES));
  EXPECT_TRUE(usable(NODE_STATE_IDLE | NODE_STATE_RES | NODE_STATE_MAINT));
}

TEST(NodeState, GpusInUseAreTheGpusAllocatedWhole) {
  EXPECT_EQ(gpus_in_use(""), 0);
  EXPECT_EQ(gpus_in_use("gpu:0"), 0);
  EXPECT_EQ(gpus_in_use("gpu:a100-80g:4(IDX:0-3),shard:0"), 4);
  EXPECT_EQ(gpus_in_use("gpu:a100:0(IDX:N/A)"), 0);
  EXPECT_EQ(gpus_in_use("gpu:3"), 3);  // no gres.conf File: a count, no indexes
  // bit_fmt's ranges have commas of their own.
  EXPECT_EQ(gpus_in_use("gpu:a100:3(IDX:0-1,3),gpu:v100:1(IDX:4)"), 4);
  EXPECT_EQ(gpus_in_use("gpu:a100:2(IDX:0-1),gres_other:5"), 2);
}

// A GPU of which a job holds shards (or an MPS share) is no whole GPU's for select/cons_tres
// (gres_sched.c): gres_used lists it in the shard's IDX. It counted as free, and morphd
// planned a Morph job onto GPUs Slurm would not give it.
TEST(NodeState, AGpuSharedOutThroughShardsOrMpsIsInUse) {
  EXPECT_EQ(gpus_in_use("gpu:a100:1(IDX:0),shard:a100:2(IDX:1-2)"), 3);
  EXPECT_EQ(gpus_in_use("gpu:a100:0(IDX:N/A),mps:a100:1(IDX:3)"), 1);
  // Shards of several GPUs, and types merged per line: each GPU once.
  EXPECT_EQ(gpus_in_use("gpu:a100:2(IDX:0-1),shard:a100:3(IDX:2,4-5),shard:v100:1(IDX:7)"), 6);
  EXPECT_EQ(gpus_in_use("gpu:a100:2(IDX:0-1),shard:a100:1(IDX:1)"), 2);
  // Without indexes Slurm keeps no per-GPU record of shards, nor keeps GPU jobs off them.
  EXPECT_EQ(gpus_in_use("gpu:1,shard:6"), 1);
}

}  // namespace
}  // namespace morph::daemon
