// Iteration times observed while a job ran a plan on an allocation: the input of an online
// refit (Morphling §4). `morph fit --warm-start` reads them from a CSV file with the header
// plan,gpus,iter_ms[,cpus_per_gpu]:
//   plan         Morph's plan text (to_string(ExecutionPlan)), e.g. "dp=4 tp=1 pp=1 ...";
//   gpus         the allocation as --gpus takes it (8xa800, 2x4xa800, 4xa100+4xv100);
//   iter_ms      the measured iteration time in ms, > 0;
//   cpus_per_gpu CPU cores per GPU, 1 to 4096; empty or absent: the node's share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/cluster/allocation.h"
#include "libmorph/cluster/cluster.h"
#include "libmorph/plan/plan.h"

namespace morph {

struct ObservedIteration {
  ExecutionPlan plan;
  Allocation allocation;
  double iter_ms = 0;
  std::string source;  // "file:line", or a label for rows taken from elsewhere
};

// Strict: unknown, repeated or missing columns, a bad plan, GPU spec, time or CPU count, a
// plan whose GPU count differs from the allocation's, and (when global_batch > 0) a plan
// that trains another global batch are errors naming source:line and the column. A file
// without data rows is an error too.
std::vector<ObservedIteration> parse_observed_iterations(std::string_view text, const std::string& source,
                                                         const Cluster& cluster, std::int64_t global_batch);
// `what` names the source (a flag) in errors about the file itself.
std::vector<ObservedIteration> read_observed_iterations(const std::string& path, std::string_view what,
                                                        const Cluster& cluster, std::int64_t global_batch);

}  // namespace morph
