// The Morphling artifact's measurements as plans on allocations: profile/<model>/
// (config.csv + data.csv, rows matched line by line) and traces/<model>/placements.csv.
//
// Data quirks handled here (see docs/validation.md):
//  - UTF-8 byte-order marks in the profile files;
//  - iter_time = 0 in a trace marks a plan that did not run (out of memory): such rows are
//    kept with iter_ms = 0 so that the memory model can be checked against them;
//  - exec_plan is a family name (ga, gc, zero-dp, zero-offload, zero-offload+gc) or a
//    3-digit PP,TP,DP code (248 = PP2 TP4 DP8); placement lists GPUs per node (11222);
//  - the profile's batch_size and seq_hid columns do not describe the runs consistently
//    and are ignored; the workload description gives batch and sequence length.
//
// Morph's own profiles (morph-profile job) extend the format: config.csv may carry
// exec_plan (the traces' notation, which can name TP/PP runs) and node_type (a morph.conf
// NodeType, instead of the artifact's servers), with 3D sizes above 9 written p2t8d16,
// up to kMaxProfileNodes nodes of any GPU count (named NODESxGPUS where one digit per node
// cannot name them); data.csv may leave forward_time, Tcc and Topt out or empty (read as
// 0: not measured).
#pragma once

#include <string>
#include <vector>

#include "libmorph/artifact/artifact_spec.h"
#include "libmorph/cluster/allocation.h"
#include "libmorph/plan/plan.h"

namespace morph {

inline constexpr int kMaxProfileNodes = 4096;  // morph-profile job --nodes

struct ArtifactRow {
  std::string source;     // file:line
  std::string exec_plan;  // as written in the file
  std::string placement;  // GPUs per node, e.g. "11222"; a profile's "16x8" beyond digits
  std::string node_type;  // morph.conf NodeType of the profile run (profile rows only)
  ExecutionPlan plan;
  Allocation allocation;
  double iter_ms = 0;     // 0: the run failed (out of memory)
  // Profile rows only: the parts of the iteration and the model size it reports.
  double forward_ms = 0;
  double backward_sync_ms = 0;
  double optimizer_ms = 0;
  double profile_params = 0;
};

// The plan an artifact row ran, for `global_batch` samples per iteration.
ExecutionPlan artifact_plan(const std::string& exec_plan, int gpus, std::int64_t global_batch,
                            const ArtifactWorkload& workload, const std::string& where);

// The exec_plan notation of `plan`'s shape (inverse of artifact_plan for DP, ZeRO-2,
// ZeRO-Offload and 3D plans; GC appends "+gc").
std::string artifact_exec_plan(const ExecutionPlan& plan);

std::vector<ArtifactRow> read_profile(const std::string& dir, const ArtifactWorkload& workload,
                                      const ArtifactSpec& spec, const Cluster& cluster);
std::vector<ArtifactRow> read_trace(const std::string& file, const ArtifactWorkload& workload,
                                    const ArtifactSpec& spec, const Cluster& cluster);

}  // namespace morph
