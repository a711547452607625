#include "libmorph/launch/driver_contract.h"

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

}  // namespace
}  // namespace morph::launch
