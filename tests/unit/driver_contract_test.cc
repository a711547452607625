#include "libmorph/launch/driver_contract.h"

#include <string>

#include <gtest/gtest.h>

namespace morph::launch {
namespace {

// slurm.conf(5): "Separate multiple exit code by a comma and/or specify numeric ranges
// using a "-" separator (e.g. RequeueExit=1-9,18)".
TEST(RequeueExit, ListsTheDriversExitAloneOrInARange) {
  EXPECT_TRUE(requeue_exit_lists("75"));
  EXPECT_TRUE(requeue_exit_lists("1-9,75"));
  EXPECT_TRUE(requeue_exit_lists("70-80"));
  EXPECT_TRUE(requeue_exit_lists("18, 75"));
  EXPECT_TRUE(requeue_exit_lists("75-75"));
}

TEST(RequeueExit, UnsetOtherCodesAndWhatSlurmWouldNotReadListNothing) {
  EXPECT_FALSE(requeue_exit_lists(""));
  EXPECT_FALSE(requeue_exit_lists("1-9,18"));
  EXPECT_FALSE(requeue_exit_lists("750"));
  EXPECT_FALSE(requeue_exit_lists("7"));
  EXPECT_FALSE(requeue_exit_lists("80-70"));
  EXPECT_FALSE(requeue_exit_lists("75x"));
  EXPECT_FALSE(requeue_exit_lists("-75"));
  EXPECT_FALSE(requeue_exit_lists("a-z,75-"));
  EXPECT_TRUE(requeue_exit_lists("12", 12));
}

// sbatch --export=NONE (SLURM_EXPORT_ENV=NONE) or a list would strip what the driver
// passes its steps' tasks: their srun names those variables; ALL or unset needs nothing.
TEST(StepExport, AddsTheDriversVariablesUnlessTheJobExportsAll) {
  const std::string ours =
      "MORPH_DRIVER,MORPH_JOB_NAME,MORPH_RECORD,MORPH_RECORD_JOB,MORPH_CHECKPOINT_CHOICE,MORPH_SAVE_REQUEST,"
      "MORPH_CONF,MORPH_FRAMEWORKS";
  EXPECT_EQ(step_export(""), "");
  EXPECT_EQ(step_export("ALL"), "");
  EXPECT_EQ(step_export("all,FOO=1"), "");
  EXPECT_EQ(step_export("NONE"), ours);
  EXPECT_EQ(step_export("NIL"), ours);
  EXPECT_EQ(step_export("PATH,HOME"), "PATH,HOME," + ours);
  EXPECT_EQ(step_export("NONE,FOO=bar"), "FOO=bar," + ours);
}

}  // namespace
}  // namespace morph::launch
