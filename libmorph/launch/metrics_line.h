// The metrics line protocol (morphrun(1), METRICS): a trainer writes one line per
// iteration to the FIFO named by MORPH_METRICS,
//
//   STEP SECONDS SAMPLES [LOSS [SIMILARITY]]
//
// (the optimizer step just finished, its wall time in seconds, the samples it consumed,
// optionally its loss and the gradient similarity of adaptive batching, the cosine
// between the gradients of the batch's two halves, -1 to 1); blank lines and lines
// starting with '#' are ignored. morphrun appends each to the job's metrics file with the
// time it arrived and the layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace morph::launch {

struct IterationMetrics {
  std::uint64_t step = 0;
  double seconds = 0;
  std::uint64_t samples = 0;
  std::optional<double> loss;
  std::optional<double> similarity = std::nullopt;  // only with a loss
};

// nullopt for a blank or comment line; morph::Error naming the field for a bad one.
std::optional<IterationMetrics> parse_metrics_line(std::string_view line);

// The trainer's line of one iteration, "STEP SECONDS SAMPLES [LOSS [SIMILARITY]]" (seconds
// and the similarity to 9, the loss to 17 significant digits); a value
// parse_metrics_line() would refuse is an error.
std::string format_metrics_line(const IterationMetrics& m);

// One line of the job's metrics file: "TIME STEP SECONDS SAMPLES LOSS|- LAYOUT [SIMILARITY]"
// (the similarity last, so that the first six fields keep their places).
std::string format_metrics_record(double unix_time, const IterationMetrics& m, std::string_view layout);

// Inverse of format_metrics_record, without the time and the layout; nullopt for a blank or
// comment line, morph::Error naming the field for a bad one.
std::optional<IterationMetrics> parse_metrics_record(std::string_view line);

}  // namespace morph::launch
