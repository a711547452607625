// GPU requests in Slurm's TRES syntax, as job_desc carries them: "gres:gpu:a100:4",
// "gres:gpu:4", "gres/gpu:2", several joined by ',' or ';'. A request without "gres:" or
// "gres/" ("gpu:4") is what slurmctld silently ignores, so it is not a GPU request; one
// with them after other text ("xgres:gpu:4") is read from there on, as slurmctld does.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace morph {

struct GpuTres {
  std::string type;  // empty: any type
  int count = 0;
};

// The GPU entry of `tres`, if any; morph::Error on a malformed GPU entry. One word after
// "gpu" is a count when it starts with a digit, else a type of one GPU ("gres:gpu:a100",
// as Slurm reads it).
std::optional<GpuTres> parse_gpu_tres(std::string_view tres, std::string_view what);

// Whether `tres` has a GPU entry, whatever its values (--mem-per-gpu's are megabytes).
bool names_gpus(std::string_view tres);

// The entries of `tres` that are not GPUs ("gres:shard:2,license/x:1"), joined by ','
// in their order; empty when there are none.
std::string without_gpus(std::string_view tres);

// "gres:gpu:<type>:<count>", the form job_submit_morph writes; "gres:gpu:<count>" for no
// type (a heterogeneous placement, whose types are a --constraint).
std::string gpu_tres(const std::string& type, int count);

}  // namespace morph
