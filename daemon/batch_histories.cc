#include "daemon/batch_histories.h"

#include <iterator>

namespace morph::daemon {
namespace {

constexpr int kReadAtOnce = 10000;  // observations per query

}  // namespace

std::vector<StepBatch> BatchHistories::update(const store::StateStore& state, store::JobId job) {
  Job& j = jobs_[job];
  for (;;) {
    const std::vector<store::Observation> batch = state.observations_after(job, j.last, kReadAtOnce);
    for (const store::Observation& o : batch)
      if (o.step > 0 && o.samples > 0) j.history.add(StepBatch{o.step, o.samples});
    if (!batch.empty()) j.last = batch.back();
    if (static_cast<int>(batch.size()) < kReadAtOnce) break;
  }
  return j.history.changes();
}

void BatchHistories::keep_only(const std::set<store::JobId>& jobs) {
  for (auto it = jobs_.begin(); it != jobs_.end();) it = jobs.contains(it->first) ? std::next(it) : jobs_.erase(it);
}

}  // namespace morph::daemon
