#include "libmorph/launch/driver_contract.h"

#include <map>
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

// A job submitted from a trainer of a driver's step inherits what that driver set: its
// morphrun would have resumed from the other job's checkpoint choice and watched its save
// request. The driver's variables hold for the job whose id MORPH_DRIVER is.
TEST(OwnDriverVariables, AnotherJobsDriverSetsNothingForThisOne) {
  const std::map<std::string, std::string> from_driver = {
      {"SLURM_JOB_ID", "41"},           {"MORPH_DRIVER", "41"},
      {"MORPH_CHECKPOINT_CHOICE", "/c/step_10"}, {"MORPH_SAVE_REQUEST", "/c/.morph-save-request.41.00c0ffee00c0ffee"},
      {"MORPH_JOB_NAME", "train"},      {"MORPH_CONF", "/etc/morph.conf"}};
  EXPECT_EQ(own_driver_variables(from_driver), from_driver);
  std::map<std::string, std::string> nested = from_driver;
  nested["SLURM_JOB_ID"] = "42";
  const std::map<std::string, std::string> kept = own_driver_variables(nested);
  EXPECT_EQ(kept, (std::map<std::string, std::string>{{"SLURM_JOB_ID", "42"}, {"MORPH_CONF", "/etc/morph.conf"}}));
  nested["MORPH_DRIVER"] = "1";  // a driver older than the job ids
  EXPECT_EQ(own_driver_variables(nested).count("MORPH_CHECKPOINT_CHOICE"), 0u);
  nested.erase("MORPH_DRIVER");  // set by hand in a job: no driver set it
  EXPECT_EQ(own_driver_variables(nested).count("MORPH_SAVE_REQUEST"), 0u);
  nested.erase("SLURM_JOB_ID");  // outside Slurm whoever set them meant them
  EXPECT_EQ(own_driver_variables(nested), nested);
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
