// What a framework rendering reads (the job's record and morphrun's folders) and what it
// produces (arguments, environment and generated files for the trainer).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "libmorph/record/job_record.h"

namespace morph::launch {

// The variables morphrun sets for every rank itself; a rule may not set them.
inline constexpr std::array<std::string_view, 9> kLauncherVariables{
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
    "MORPH_GA", "MORPH_WORKERS", "MORPH_LOCAL_BATCH"};

struct RenderContext {
  JobRecord record;             // the plan (record.current.plan) and the request
  std::string checkpoint_dir;   // where the trainer saves (--save); may be empty
  std::string resume_dir;       // the checkpoint to load (--load); may be empty
  std::string config_dir;       // a private folder where generated files go (DeepSpeed JSON)
  bool bf16 = true;             // every GPU type of the placement computes in bfloat16 (GpuType Bf16=)
};

struct Rendering {
  std::vector<std::string> args;                            // appended to the trainer's command line
  std::vector<std::pair<std::string, std::string>> env;     // set for the trainer
  std::vector<std::pair<std::string, std::string>> files;   // path -> content, written before start
};

}  // namespace morph::launch
