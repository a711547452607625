// The iteration report morphrun sends morphd: one JSON object per message, the payload of
// one munge credential (docs/launcher.md, "Reporting to morphd"):
//
//   {"v":1,"job":J,"step":S,"sent":UNIX_TIME,
//    "iterations":[{"step":N,"seconds":X,"samples":N,"loss":X|null,"layout":"dp=..,tp=..,pp=..,zero=.."},...]}
//
// Pure encoding and decoding; decode_report refuses anything else (unknown or missing
// keys, wrong types, values out of range, too many iterations, too many bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "libmorph/launch/metrics_line.h"

namespace morph::report {

inline constexpr int kReportVersion = 1;
inline constexpr std::size_t kMaxIterationsPerReport = 1024;
inline constexpr std::size_t kMaxLayoutChars = 64;
// A full report of kMaxIterationsPerReport iterations takes about 128 KiB.
inline constexpr std::size_t kMaxReportBytes = 256 * 1024;

struct ReportedIteration {
  launch::IterationMetrics metrics;
  std::string layout;  // the plan's layout it ran under, as in the metrics file
};

struct ReportMessage {
  std::uint32_t job_id = 0;   // Slurm job id, > 0
  std::uint32_t step_id = 0;  // Slurm step id
  double sent_unix_s = 0;
  std::vector<ReportedIteration> iterations;  // 1 .. kMaxIterationsPerReport
};

// Throws morph::Error "report: iteration.FIELD: what is wrong" when one iteration breaks
// a bound of the report (its counts up to 2^53, exact in a JSON number).
void check_iteration(const ReportedIteration& iteration);

// Throws morph::Error when the message itself breaks a bound (so that a client never
// sends what the server would refuse).
std::string encode_report(const ReportMessage& message);

// Throws morph::Error "report: FIELD: what is wrong".
ReportMessage decode_report(std::string_view json);

}  // namespace morph::report
