#include "daemon/report/report_message.h"

#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/state/layout.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::report {
namespace {

using nlohmann::json;

// The bounds of metrics_line.cc, so that whatever a metrics line can hold can be reported.
constexpr double kMinSeconds = 1e-9;
constexpr double kMaxSeconds = 1e7;
constexpr double kMaxAbsLoss = 1e300;
constexpr double kMaxUnixTime = 1e11;
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 53;  // exact in a JSON number

[[noreturn]] void refuse(std::string_view field, std::string_view why) {
  throw Error(fmt::format("report: {}: {}", field, why));
}

void check_keys(const json& object, std::string_view field, const std::set<std::string>& required,
                const std::set<std::string>& optional = {}) {
  if (!object.is_object()) refuse(field, "not an object");
  for (const auto& item : object.items())
    if (!required.count(item.key()) && !optional.count(item.key()))
      refuse(field, fmt::format("unknown key {}", quote(item.key())));
  for (const std::string& key : required)
    if (!object.contains(key)) refuse(field, fmt::format("missing key {}", quote(key)));
}

std::uint64_t unsigned_field(const json& value, std::string_view field, std::uint64_t min, std::uint64_t max) {
  if (!value.is_number_unsigned()) refuse(field, "not a non-negative integer");
  const auto n = value.get<std::uint64_t>();
  if (n < min || n > max) refuse(field, fmt::format("{} is not in [{}, {}]", n, min, max));
  return n;
}

double number_field(const json& value, std::string_view field, double min, double max) {
  if (!value.is_number()) refuse(field, "not a number");
  const double x = value.get<double>();
  if (!std::isfinite(x) || x < min || x > max) refuse(field, fmt::format("{} is not in [{}, {}]", x, min, max));
  return x;
}

std::string layout_field(const json& value, std::string_view field) {
  if (!value.is_string()) refuse(field, "not a string");
  const auto& text = value.get_ref<const std::string&>();
  if (text.size() > kMaxLayoutChars) refuse(field, fmt::format("longer than {} characters", kMaxLayoutChars));
  try {
    state::parse_layout(text, "layout");
  } catch (const Error& e) {
    refuse(field, e.what());
  }
  return text;
}

void check_message(const ReportMessage& m) {
  if (m.job_id == 0) refuse("job", "0 is not a job id");
  if (m.iterations.empty()) refuse("iterations", "empty");
  if (m.iterations.size() > kMaxIterationsPerReport)
    refuse("iterations", fmt::format("{} iterations, at most {} per report", m.iterations.size(), kMaxIterationsPerReport));
  if (!std::isfinite(m.sent_unix_s) || m.sent_unix_s < 0 || m.sent_unix_s > kMaxUnixTime)
    refuse("sent", fmt::format("{} is not a Unix time", m.sent_unix_s));
}

// One iteration's entry, checked by the decoder's rules: what is sent is what the server
// accepts.
json iteration_json(const ReportedIteration& it, const std::string& field) {
  json entry = {{"step", it.metrics.step},
                {"seconds", it.metrics.seconds},
                {"samples", it.metrics.samples},
                {"loss", it.metrics.loss ? json(*it.metrics.loss) : json(nullptr)},
                {"layout", it.layout}};
  unsigned_field(entry["step"], field + ".step", 0, kMaxCount);
  number_field(entry["seconds"], field + ".seconds", kMinSeconds, kMaxSeconds);
  unsigned_field(entry["samples"], field + ".samples", 0, kMaxCount);
  if (it.metrics.loss) number_field(entry["loss"], field + ".loss", -kMaxAbsLoss, kMaxAbsLoss);
  layout_field(entry["layout"], field + ".layout");
  return entry;
}

}  // namespace

void check_iteration(const ReportedIteration& iteration) { iteration_json(iteration, "iteration"); }

std::string encode_report(const ReportMessage& message) {
  check_message(message);
  json iterations = json::array();
  for (std::size_t i = 0; i < message.iterations.size(); ++i)
    iterations.push_back(iteration_json(message.iterations[i], fmt::format("iterations[{}]", i)));
  const json object = {{"v", kReportVersion},
                       {"job", message.job_id},
                       {"step", message.step_id},
                       {"sent", message.sent_unix_s},
                       {"iterations", std::move(iterations)}};
  std::string text = object.dump();
  if (text.size() > kMaxReportBytes)
    refuse("report", fmt::format("{} bytes, at most {}", text.size(), kMaxReportBytes));
  return text;
}

ReportMessage decode_report(std::string_view text) {
  if (text.size() > kMaxReportBytes) refuse("report", fmt::format("{} bytes, at most {}", text.size(), kMaxReportBytes));
  json object;
  try {
    object = json::parse(text);
  } catch (const json::exception&) {
    refuse("report", "not JSON");
  }
  check_keys(object, "report", {"v", "job", "step", "sent", "iterations"});
  if (unsigned_field(object["v"], "v", 0, std::numeric_limits<std::uint32_t>::max()) != kReportVersion)
    refuse("v", fmt::format("version {} is not {}", object["v"].dump(), kReportVersion));
  ReportMessage m;
  m.job_id = static_cast<std::uint32_t>(unsigned_field(object["job"], "job", 1, std::numeric_limits<std::uint32_t>::max()));
  m.step_id = static_cast<std::uint32_t>(unsigned_field(object["step"], "step", 0, std::numeric_limits<std::uint32_t>::max()));
  m.sent_unix_s = number_field(object["sent"], "sent", 0, kMaxUnixTime);
  const json& iterations = object["iterations"];
  if (!iterations.is_array()) refuse("iterations", "not an array");
  if (iterations.empty()) refuse("iterations", "empty");
  if (iterations.size() > kMaxIterationsPerReport)
    refuse("iterations", fmt::format("{} iterations, at most {} per report", iterations.size(), kMaxIterationsPerReport));
  m.iterations.reserve(iterations.size());
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    const json& entry = iterations[i];
    const std::string field = fmt::format("iterations[{}]", i);
    check_keys(entry, field, {"step", "seconds", "samples", "loss", "layout"});
    ReportedIteration it;
    it.metrics.step = unsigned_field(entry["step"], field + ".step", 0, kMaxCount);
    it.metrics.seconds = number_field(entry["seconds"], field + ".seconds", kMinSeconds, kMaxSeconds);
    it.metrics.samples = unsigned_field(entry["samples"], field + ".samples", 0, kMaxCount);
    if (!entry["loss"].is_null()) it.metrics.loss = number_field(entry["loss"], field + ".loss", -kMaxAbsLoss, kMaxAbsLoss);
    it.layout = layout_field(entry["layout"], field + ".layout");
    m.iterations.push_back(std::move(it));
  }
  return m;
}

}  // namespace morph::report
