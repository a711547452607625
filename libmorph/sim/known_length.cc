#include "libmorph/sim/known_length.h"

#include <cmath>

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::sim {

JobLength parse_job_length(std::string_view text, std::string_view what) {
  if (text == "exact") return JobLength::exact;
  if (text == "declared") return JobLength::declared;
  if (text == "unknown") return JobLength::unknown;
  throw Error(fmt::format("{}: {} is not exact, declared or unknown", what, quote(text)));
}

const char* to_string(JobLength length) {
  switch (length) {
    case JobLength::exact: return "exact";
    case JobLength::declared: return "declared";
    case JobLength::unknown: return "unknown";
  }
  return "?";
}

double slurm_time_limit_s(double duration_s) {
  constexpr double kHour = 3600;
  constexpr double kLimits[] = {0.25 * kHour, 0.5 * kHour, kHour, 2 * kHour, 4 * kHour, 8 * kHour, 12 * kHour,
                                24 * kHour, 48 * kHour, 72 * kHour, 168 * kHour};
  for (double limit : kLimits)
    if (duration_s <= limit) return limit;
  return std::ceil(duration_s / (168 * kHour)) * 168 * kHour;
}

void declare_lengths(std::vector<SimJob>& jobs, JobLength length) {
  for (SimJob& j : jobs) {
    j.state.declared_iterations = length == JobLength::exact ? j.steps : 0;
    // A row of duration 0 does not say its run time: no limit a user would have given.
    j.state.time_limit_s = length == JobLength::declared && j.duration_s > 0 ? slurm_time_limit_s(j.duration_s) : 0;
  }
}

}  // namespace morph::sim
