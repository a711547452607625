// Whether a task can join its step's MPI world (launcher/pmi_env.h): morphrun refuses a
// reshard in a step started without PMI instead of letting MPI_Init abort.
#include "launcher/pmi_env.h"

#include <gtest/gtest.h>

namespace morph::launcher {
namespace {

TEST(PmiEnv, APmiOrOpenMpiRankIsNeededAndSlurmsVariablesAreNotEnough) {
  // srun without --mpi where MpiDefault=none: Slurm's variables alone.
  const launch::Environment srun_alone{{"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}};
  EXPECT_FALSE(has_pmi(srun_alone));
  EXPECT_FALSE(has_pmi({}));
  for (const char* name : {"PMIX_RANK", "PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK"}) {
    launch::Environment env = srun_alone;
    env.emplace(name, "0");
    EXPECT_TRUE(has_pmi(env)) << name;
  }
  EXPECT_FALSE(has_pmi({{"PMIX_NAMESPACE", "slurm.pmix.42.0"}, {"OMPI_MCA_btl", "self"}}));
}

}  // namespace
}  // namespace morph::launcher
