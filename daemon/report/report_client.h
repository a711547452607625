// What morphrun uses to report rank 0's iterations to morphd: iterations are queued as
// they arrive and sent by flush(), each batch of up to kMaxIterationsPerReport as one
// munge credential over one TCP connection, answered by one line ("ok" or
// "refused: REASON"). Nothing here throws to the caller or blocks for longer than the
// timeout per connection: while morphd is unreachable, the newest max_pending iterations
// are kept for the next flush and the failure is reported once on stderr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "daemon/report/report_message.h"
#include "libmorph/launch/metrics_line.h"
#include "libmorph/util/host_port.h"

namespace morph::report {

struct ReportClientOptions {
  double timeout_s = 2;            // connect, send and wait for the answer, per connection
  std::size_t max_pending = 4096;  // iterations kept while morphd is unreachable (oldest dropped)
  bool IsValid(std::string* error) const;
};

class ReportClient {
 public:
  // `address` is MorphdAddress (HOST:PORT); throws morph::Error for a bad address or options.
  ReportClient(std::string_view address, std::uint32_t job_id, std::uint32_t step_id,
               ReportClientOptions options = {});

  // An iteration the report cannot hold (check_iteration) is dropped, warned about once.
  void queue(const launch::IterationMetrics& metrics, std::string_view layout);

  // Sends what is pending; true when nothing is left pending. Never throws.
  bool flush() noexcept;

  std::size_t pending() const { return pending_.size(); }
  std::size_t sent() const { return sent_; }        // iterations morphd accepted
  std::size_t dropped() const { return dropped_; }  // over max_pending, or refused by morphd

 private:
  // Sends one batch; "" when accepted, else why not. `refused` tells a refusal (the batch
  // is dropped) from a failure to deliver (the batch is kept).
  std::string send_batch(const ReportMessage& message, bool& refused);
  void warn_once(const std::string& why);

  HostPort address_;
  std::uint32_t job_id_;
  std::uint32_t step_id_;
  ReportClientOptions options_;
  std::deque<ReportedIteration> pending_;
  std::size_t sent_ = 0;
  std::size_t dropped_ = 0;
  bool warned_ = false;
};

}  // namespace morph::report
