#include "libmorph/hetero/iteration_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {

double VswThroughputFit::normalized(int workers) const {
  // JABAS Eq. (1): thp_vsw = alpha_thp * ln(n_vsw) + beta_thp
  return alpha * std::log(static_cast<double>(workers)) + beta;
}

VswThroughputFit fit_vsw_throughput(const JabasBatchProfile& batch, int local_batch) {
  const JabasCompProfile& one = batch.comp.front();
  const double thp_1 = local_batch / (one.fwd_ms + one.bwd_ms);
  VswThroughputFit f;
  if (batch.comp.size() < 2) return f;
  double mx = 0, my = 0;
  for (const JabasCompProfile& c : batch.comp) {
    mx += std::log(static_cast<double>(c.workers));
    my += local_batch * c.workers / (c.fwd_ms + c.bwd_ms) / thp_1;
  }
  const double n = static_cast<double>(batch.comp.size());
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (const JabasCompProfile& c : batch.comp) {
    const double x = std::log(static_cast<double>(c.workers)) - mx;
    sxx += x * x;
    sxy += x * (local_batch * c.workers / (c.fwd_ms + c.bwd_ms) / thp_1 - my);
  }
  f.alpha = sxy / sxx;
  f.beta = my - f.alpha * mx;
  return f;
}

double GpuIterationModel::fwd_bwd_ms(int workers) const {
  // JABAS Eq. (2): t_vsw = B_L * n_vsw / thp_vsw(B_L, n_vsw)
  return fwd_bwd_1_ms * workers / throughput.normalized(workers);
}

double GpuIterationModel::data_time_ms(int workers) const {
  const std::size_t n = static_cast<std::size_t>(workers);
  if (n < data_ms.size() && data_ms[n] > 0) return data_ms[n];
  return data_ms[1] * workers;
}

double GpuIterationModel::iteration_ms(int workers, int ga_steps) const {
  const double t_vsw = fwd_bwd_ms(workers);
  const double data = data_time_ms(workers);
  // JABAS Eq. (5): t_update = tau * (t_optim + t_copy * (n_vsw - 1))
  const double update = update_share * (update_ms + copy_ms * (workers - 1));
  // JABAS Eq. (6): t = t_vsw * n_GA + t_vsw^fwd + max(t_vsw^bwd, t_comm) + t_update
  return data + bn_sync_ms * workers + (data + t_vsw) * (ga_steps - 1) + t_vsw * fwd_ratio +
         std::max(t_vsw * (1 - fwd_ratio), allreduce.overlapped_ms) + allreduce.last_ms + update;
}

GpuIterationModel gpu_iteration_model(const JabasProfile& profile, const JabasServer& server, int local_batch,
                                      int gpus, int servers) {
  const auto it = server.by_local_batch.find(local_batch);
  if (it == server.by_local_batch.end())
    throw Error(fmt::format("{}: server {} has no profile at local batch {}", profile.dir, quote(server.name), local_batch));
  const JabasBatchProfile& batch = it->second;
  GpuIterationModel m;
  m.local_batch = local_batch;
  m.max_workers = batch.max_workers;
  m.throughput = fit_vsw_throughput(batch, local_batch);
  for (int n = 1; n <= m.max_workers; ++n)
    if (!(m.throughput.normalized(n) > 0))
      throw Error(fmt::format("{}: the throughput fit (Eq. 1) is not positive at {} workers", batch.comp_dir, n));
  const JabasCompProfile& one = batch.comp.front();
  const JabasCompProfile& most = batch.comp.back();  // JABAS takes the constants from the most workers
  m.fwd_bwd_1_ms = one.fwd_ms + one.bwd_ms;
  m.fwd_ratio = most.fwd_ms / (most.fwd_ms + most.bwd_ms);
  m.data_ms.assign(static_cast<std::size_t>(most.workers) + 1, 0.0);
  for (const JabasCompProfile& c : batch.comp) m.data_ms[static_cast<std::size_t>(c.workers)] = c.data_ms;
  m.bn_sync_ms = most.bn_sync_ms;
  m.update_ms = most.update_ms;
  m.copy_ms = most.workers > 1 ? most.copy_ms / (most.workers - 1) : 0;
  m.update_share = update_share(profile.bucket_mib, choose_weight_sync(profile.bucket_mib));
  m.allreduce = bucket_allreduce(profile, server, gpus, servers);
  return m;
}

}  // namespace morph
