#include "libmorph/launch/driver_contract.h"

#include <charconv>

#include <fmt/format.h>

#include "libmorph/util/parse.h"

namespace morph::launch {
namespace {

bool read_int(std::string_view text, int& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool requeue_exit_lists(std::string_view requeue_exit, int code) {
  for (std::string_view item : split(requeue_exit, ',')) {
    item = trim(item);
    const std::size_t dash = item.find('-', 1);
    int low = 0, high = 0;
    if (dash == std::string_view::npos ? read_int(item, low) && read_int(item, high)
                                       : read_int(item.substr(0, dash), low) && read_int(item.substr(dash + 1), high))
      if (low <= code && code <= high) return true;
  }
  return false;
}

std::string step_export(std::string_view job_export) {
  std::string out;
  for (std::string_view item : split(job_export, ',')) {
    const std::string word = to_upper(std::string(trim(item)));
    if (word == "ALL") return {};
    if (word.empty() || word == "NONE" || word == "NIL") continue;
    out += fmt::format("{}{}", out.empty() ? "" : ",", trim(item));
  }
  if (trim(job_export).empty()) return {};
  for (std::string_view name : kDriverStepVariables) out += fmt::format("{}{}", out.empty() ? "" : ",", name);
  return out;
}

std::map<std::string, std::string> own_driver_variables(std::map<std::string, std::string> env) {
  const auto driver = env.find("MORPH_DRIVER"), job = env.find("SLURM_JOB_ID");
  if (job == env.end() || (driver != env.end() && driver->second == job->second)) return env;
  for (const char* name : {"MORPH_DRIVER", "MORPH_CHECKPOINT_CHOICE", "MORPH_SAVE_REQUEST", "MORPH_JOB_NAME"})
    env.erase(name);
  return env;
}

}  // namespace morph::launch
