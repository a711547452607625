// The profile folder `morph-profile job` writes: config.csv + data.csv in the Morphling
// artifact's format as `morph fit --profile` reads it (libmorph/artifact/artifact_rows.h),
// with exec_plan and node_type columns and iteration times only.
#pragma once

#include <string>
#include <vector>

#include "libmorph/model/model_spec.h"
#include "libmorph/perf/profile_sampling.h"

namespace morph::profile {

struct MeasuredConfig {
  ProfileConfig config;
  double iter_ms = 0;  // median of the measured iterations
};

struct ProfileFolderInfo {
  ModelSpec model;
  std::int64_t global_batch = 0;
  std::int64_t seq_len = 0;
  std::string node_type;  // morph.conf NodeType
  int cpus_per_gpu = 1;
};

// Creates `dir` if needed and (over)writes its config.csv and data.csv.
void write_profile_folder(const std::string& dir, const ProfileFolderInfo& info,
                          const std::vector<MeasuredConfig>& rows);

}  // namespace morph::profile
