// The environment a trainer rank gets from morphrun: what PyTorch's init_process_group
// (env://), Megatron-LM and DeepSpeed read, the rank's GPU and threads, and its place in
// the plan's groups.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "libmorph/launch/port_range.h"
#include "libmorph/launch/step_layout.h"
#include "libmorph/plan/plan.h"
#include "libmorph/record/job_record.h"

namespace morph::launch {

// Megatron's rank order (TP innermost): rank = pp_rank*(t*d) + dp_rank*t + tp_rank.
struct RankCoordinates {
  int dp = 0, tp = 0, pp = 0;
};
RankCoordinates rank_coordinates(const ExecutionPlan& plan, int rank);

// The rendezvous port of a step, from morph.conf's MasterPorts=LOW-HIGH:
// LOW + (job_id mod J)*8 + (step_id mod 8) with J = (HIGH-LOW+1)/8, so that concurrent jobs
// on a node (within J job ids) and up to 8 concurrent steps of a job never share a port;
// the batch and extern steps count as step 0.
int master_port(std::uint32_t job_id, std::uint32_t step_id, const PortRange& ports);

// CUDA_VISIBLE_DEVICES of local rank `local`: the node's GPU at that index when the step
// sees one per rank, the one GPU when the task sees only its own, else the index itself
// (no GPUs: the emulated cluster).
std::string rank_gpu(const StepLayout& step, int local);

// What one rank of a data-parallel replica computes per iteration: `workers` concurrent
// workers each accumulating `ga_steps` micro-steps of `local_batch` samples. The plan's
// (1, ga, mb*mbs) on a homogeneous placement; its GPU type's group on a heterogeneous one.
struct RankBatch {
  int local_batch = 1;
  int workers = 1;
  int ga_steps = 1;
};

// The rank batch of a GPU of type `gpu_type` (the node's, from morph.conf) under
// `placement`; throws morph::Error when the placement is heterogeneous and has no group
// of that type ("" : the node's type is unknown).
RankBatch rank_batch(const Placement& placement, const std::string& gpu_type);

struct RankSettings {
  std::string master_addr;
  int master_port = 0;
  int threads = 1;  // OMP_NUM_THREADS: the CPUs the rank is bound to
  RankBatch batch;
};

// RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK (the node's index, as
// torchrun names it; CROSS_RANK as DeepSpeed's launcher does), MASTER_ADDR, MASTER_PORT,
// CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS, MORPH_DP_RANK, MORPH_TP_RANK, MORPH_PP_RANK,
// MORPH_LOCAL_BATCH, MORPH_WORKERS, MORPH_GA (settings.batch).
std::vector<std::pair<std::string, std::string>> rank_environment(const ExecutionPlan& plan, const StepLayout& step,
                                                                  int rank, const RankSettings& settings);

}  // namespace morph::launch
