// Iteration time of one GPU running n_vsw virtual workers (VSWs) with n_GA extra
// gradient-accumulation steps at one local batch: JABAS (seed 004) Eq. (1)-(6), with the
// data-loading and batch-norm terms that JABAS's own predictor adds to Eq. (6).
#pragma once

#include <vector>

#include "libmorph/hetero/allreduce_model.h"
#include "libmorph/hetero/jabas_profile.h"

namespace morph {

// Eq. (1): thp_vsw(n) / thp_vsw(1) = alpha * ln(n) + beta, least squares on the profiles.
struct VswThroughputFit {
  double alpha = 0;
  double beta = 1;
  double normalized(int workers) const;
};

VswThroughputFit fit_vsw_throughput(const JabasBatchProfile& batch, int local_batch);

struct GpuIterationModel {
  int local_batch = 0;
  int max_workers = 0;             // n_max
  VswThroughputFit throughput;
  double fwd_bwd_1_ms = 0;         // one worker's forward + backward
  double fwd_ratio = 0;            // zeta
  std::vector<double> data_ms;     // [n]: profiled data time with n workers (0: not profiled)
  double bn_sync_ms = 0;           // per worker
  double update_ms = 0;            // t_optim
  double copy_ms = 0;              // t_copy, per extra worker
  double update_share = 1;         // tau
  BucketAllreduce allreduce;

  double fwd_bwd_ms(int workers) const;   // Eq. (2): t_vsw
  double data_time_ms(int workers) const;
  // One accumulation step more (n_GA + 1): data and forward + backward of every worker.
  double step_ms(int workers) const { return data_time_ms(workers) + fwd_bwd_ms(workers); }
  // Eq. (6) with n_GA = ga_steps - 1.
  double iteration_ms(int workers, int ga_steps) const;
};

// The model of `server` at `local_batch` when it trains with `gpus` GPUs on `servers`
// servers (these set the all-reduce). Throws when the server has no profile at that batch.
GpuIterationModel gpu_iteration_model(const JabasProfile& profile, const JabasServer& server, int local_batch,
                                      int gpus, int servers);

}  // namespace morph
