#include "libmorph/launch/metrics_line.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::launch {

std::optional<IterationMetrics> parse_metrics_line(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() == '#') return std::nullopt;
  std::vector<std::string_view> fields;
  for (std::string_view f : split(line, ' '))
    if (!trim(f).empty()) fields.push_back(trim(f));
  if (fields.size() < 3 || fields.size() > 5)
    throw Error(fmt::format("metrics line {}: want STEP SECONDS SAMPLES [LOSS [SIMILARITY]]", quote(line)));
  IterationMetrics m;
  m.step = static_cast<std::uint64_t>(parse_int(fields[0], "metrics STEP", 0, INT64_MAX));
  m.seconds = parse_double(fields[1], "metrics SECONDS", 1e-9, 1e7);
  m.samples = static_cast<std::uint64_t>(parse_int(fields[2], "metrics SAMPLES", 0, INT64_MAX));
  if (fields.size() >= 4) m.loss = parse_double(fields[3], "metrics LOSS", -1e300, 1e300);
  if (fields.size() == 5) m.similarity = parse_double(fields[4], "metrics SIMILARITY", -1, 1);
  return m;
}

std::string format_metrics_line(const IterationMetrics& m) {
  std::string line = fmt::format("{} {:.9g} {}", m.step, m.seconds, m.samples);
  if (m.similarity && !m.loss) throw Error("metrics: a SIMILARITY needs a LOSS before it");
  if (m.loss) line += fmt::format(" {:.17g}", *m.loss);
  if (m.similarity) line += fmt::format(" {:.9g}", *m.similarity);
  parse_metrics_line(line);  // the bounds morphrun checks
  return line;
}

std::string format_metrics_record(double unix_time, const IterationMetrics& m, std::string_view layout) {
  return fmt::format("{:.3f} {} {:.6g} {} {} {}{}", unix_time, m.step, m.seconds, m.samples,
                     m.loss ? fmt::format("{:.17g}", *m.loss) : std::string("-"), layout,
                     m.similarity ? fmt::format(" {:.9g}", *m.similarity) : std::string());
}

std::optional<IterationMetrics> parse_metrics_record(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() == '#') return std::nullopt;
  std::vector<std::string_view> fields;
  for (std::string_view f : split(line, ' '))
    if (!trim(f).empty()) fields.push_back(trim(f));
  if (fields.size() < 6 || fields.size() > 7)
    throw Error(fmt::format("metrics record {}: want TIME STEP SECONDS SAMPLES LOSS LAYOUT [SIMILARITY]", quote(line)));
  const std::string loss = fields[4] == "-" ? std::string() : " " + std::string(fields[4]);
  if (fields.size() == 7 && loss.empty())
    throw Error(fmt::format("metrics record {}: a SIMILARITY needs a LOSS", quote(line)));
  const std::string similarity = fields.size() == 7 ? " " + std::string(fields[6]) : std::string();
  return parse_metrics_line(fmt::format("{} {} {}{}{}", fields[1], fields[2], fields[3], loss, similarity));
}

}  // namespace morph::launch
