// Rank 0's iterations on their way to morphd (MorphdAddress= in morph.conf(5)): queued as
// they arrive, flushed every kFlushIntervalS (longer after a failure) and at the end.
// Without MorphdAddress, outside a Slurm job, or in a morphrun built without MUNGE, it
// reports nothing (the last two say so once). Never throws after construction and never
// stops the trainer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "libmorph/launch/metrics_line.h"

namespace morph::launcher {

class MorphdReport {
 public:
  static constexpr double kFlushIntervalS = 5;
  static constexpr double kMaxBackoffS = 60;

  MorphdReport(const std::string& address, std::uint32_t job_id, std::uint32_t step_id);
  ~MorphdReport();
  MorphdReport(const MorphdReport&) = delete;
  MorphdReport& operator=(const MorphdReport&) = delete;

  bool enabled() const { return impl_ != nullptr; }
  void queue(const launch::IterationMetrics& metrics, std::string_view layout);
  // Flushes when the interval since the last attempt has passed.
  void tick();
  // Flushes now (at the end of the step).
  void flush();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace morph::launcher
