#include "launcher/morphd_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "config.h"
#ifdef HAVE_MUNGE
#include "daemon/report/report_client.h"
#endif

namespace morph::launcher {

#ifdef HAVE_MUNGE
struct MorphdReport::Impl {
  using Clock = std::chrono::steady_clock;
  report::ReportClient client;
  Clock::time_point next_flush = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(kFlushIntervalS));
  double interval_s = kFlushIntervalS;

  void flush() {
    const bool ok = client.flush();
    interval_s = ok ? kFlushIntervalS : std::min(kMaxBackoffS, 2 * interval_s);
    next_flush = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_s));
  }
};

MorphdReport::MorphdReport(const std::string& address, std::uint32_t job_id, std::uint32_t step_id) {
  if (address.empty()) return;
  if (job_id == 0) {
    std::fprintf(stderr, "morphrun: MorphdAddress=%s: not in a Slurm job; iterations are not reported\n",
                 address.c_str());
    return;
  }
  impl_.reset(new Impl{report::ReportClient(address, job_id, step_id)});
}

void MorphdReport::queue(const launch::IterationMetrics& metrics, std::string_view layout) {
  if (impl_) impl_->client.queue(metrics, layout);
}

void MorphdReport::tick() {
  if (impl_ && Impl::Clock::now() >= impl_->next_flush) impl_->flush();
}

void MorphdReport::flush() {
  if (impl_) impl_->flush();
}
#else
struct MorphdReport::Impl {};

MorphdReport::MorphdReport(const std::string& address, std::uint32_t, std::uint32_t) {
  if (!address.empty())
    std::fprintf(stderr, "morphrun: MorphdAddress=%s: morphrun was built without MUNGE; iterations are not reported\n",
                 address.c_str());
}
void MorphdReport::queue(const launch::IterationMetrics&, std::string_view) {}
void MorphdReport::tick() {}
void MorphdReport::flush() {}
#endif

MorphdReport::~MorphdReport() = default;

}  // namespace morph::launcher
