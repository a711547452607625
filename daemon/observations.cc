#include "daemon/observations.h"

namespace morph::daemon {

std::vector<store::Observation> observations_of(const report::ReportMessage& message, double received_s) {
  std::vector<store::Observation> out;
  for (const report::ReportedIteration& it : message.iterations)
    if (it.metrics.samples > 0)  // 0: unknown (metrics line), no throughput
      out.push_back(store::Observation{message.job_id, static_cast<std::int64_t>(received_s),
                                       static_cast<std::int64_t>(it.metrics.step), it.metrics.seconds,
                                       static_cast<std::int64_t>(it.metrics.samples), it.layout});
  return out;
}

}  // namespace morph::daemon
