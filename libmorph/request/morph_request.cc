#include "libmorph/request/morph_request.h"

#include <cstdint>

#include <fmt/format.h>

#include "libmorph/request/option_check.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

// Throws the C checker's message when `value` is not acceptable for option `name`.
void check(std::string_view name, std::string_view value) {
  char error[256];
  const std::string n(name), v(value);
  if (value.find('\0') != std::string_view::npos)
    throw Error(fmt::format("--morph-{}: {} holds a NUL byte", name, quote(value)));
  if (morph_check_option(n.c_str(), v.c_str(), error, sizeof error) != 0) throw Error(error);
}

std::int64_t integer(std::string_view value) { return request_integer("value", value, 0, INT64_MAX); }

// MIN:MAX that the C check has accepted.
AdaptiveBatchRange checked_range(std::string_view text) {
  const std::size_t colon = text.find(':');
  return {integer(text.substr(0, colon)), integer(text.substr(colon + 1))};
}

}  // namespace

std::int64_t request_integer(std::string_view what, std::string_view text, std::int64_t min, std::int64_t max) {
  char error[256];
  const std::string w(what), t(text);
  std::int64_t value = 0;
  const bool nul = text.find('\0') != std::string_view::npos;
  if (nul || morph_parse_integer(w.c_str(), t.c_str(), min, max, &value, error, sizeof error) != 0)
    throw Error(nul ? fmt::format("{}: {} is not an integer", what, quote(text)) : error);
  return value;
}

AdaptiveBatchRange parse_adaptive_batch(std::string_view text) {
  check("adaptive-batch", text);
  return checked_range(text);
}

const char* to_string(Sla sla) { return sla == Sla::guaranteed ? "guaranteed" : "best-effort"; }

const char* to_string(Framework f) {
  return f == Framework::megatron ? "megatron" : f == Framework::deepspeed ? "deepspeed" : "torch";
}

const std::vector<MorphOption>& morph_options() {
  static const std::vector<MorphOption> options = [] {
    std::vector<MorphOption> out;
    for (int i = 0; i < morph_option_count; ++i) {
      const morph_option_info& o = morph_option_table[i];
      out.push_back({o.name, o.arg_info, o.usage, o.env});
    }
    return out;
  }();
  return options;
}

void set_morph_option(MorphRequest& r, std::string_view name, std::string_view value) {
  check(name, value);
  if (name == "model") {
    r.model = std::string(value);
  } else if (name == "batch") {
    r.global_batch = integer(value);
  } else if (name == "seq") {
    r.seq_len = integer(value);
  } else if (name == "sla") {
    r.sla = to_lower(value) == "guaranteed" ? Sla::guaranteed : Sla::best_effort;
    r.sla_given = true;
  } else if (name == "plans") {
    r.plans = to_lower(value);
  } else if (name == "gpus") {
    const std::size_t dash = value.find('-');
    r.gpus_min = static_cast<int>(integer(value.substr(0, dash)));
    r.gpus_max = static_cast<int>(dash == std::string_view::npos ? r.gpus_min : integer(value.substr(dash + 1)));
  } else if (name == "gpu-type") {
    r.gpu_types.clear();
    for (std::string_view t : split(value, ',')) r.gpu_types.push_back(to_lower(t));
  } else if (name == "framework") {
    const std::string v = to_lower(value);
    r.framework = v == "megatron" ? Framework::megatron : v == "deepspeed" ? Framework::deepspeed : Framework::torch;
  } else if (name == "iterations") {
    r.iterations = integer(value);
  } else if (name == "adaptive-batch") {
    const AdaptiveBatchRange range = checked_range(value);  // checked above
    r.adaptive_min = range.min_batch;
    r.adaptive_max = range.max_batch;
  } else {  // plan
    r.baseline_plan = to_lower(value);
  }
}

void validate_request(const MorphRequest& r) {
  if (r.model.empty()) throw Error("--morph-model: missing (every Morph job names its model)");
  if (r.global_batch < 1) throw Error("--morph-batch: missing (the global batch size is required)");
  if (r.gpus_max > 0 && r.gpus_max < r.gpus_min) throw Error("--morph-gpus: MAX is below MIN");
  if (r.adaptive_batch() && (r.global_batch < r.adaptive_min || r.global_batch > r.adaptive_max))
    throw Error(fmt::format("--morph-adaptive-batch: the starting batch {} (--morph-batch) is outside {}:{}",
                            r.global_batch, r.adaptive_min, r.adaptive_max));
}

std::vector<std::pair<std::string, std::string>> to_job_env(const MorphRequest& r) {
  const MorphRequest defaults;
  std::vector<std::pair<std::string, std::string>> env;
  auto add = [&](std::size_t option, std::string value) {
    env.emplace_back(morph_option_table[option].env, std::move(value));
  };
  add(0, r.model);
  add(1, std::to_string(r.global_batch));
  if (r.seq_len > 0) add(2, std::to_string(r.seq_len));
  if (r.sla_given) add(3, to_string(r.sla));
  if (r.plans != defaults.plans) add(4, r.plans);
  if (r.gpus_min != 1 || r.gpus_max != 0)
    add(5, r.gpus_max > 0 ? fmt::format("{}-{}", r.gpus_min, r.gpus_max) : std::to_string(r.gpus_min));
  if (!r.gpu_types.empty()) add(6, fmt::format("{}", fmt::join(r.gpu_types, ",")));
  if (r.framework != defaults.framework) add(7, to_string(r.framework));
  if (!r.baseline_plan.empty()) add(8, r.baseline_plan);
  if (r.iterations > 0) add(9, std::to_string(r.iterations));
  if (r.adaptive_batch()) add(10, fmt::format("{}:{}", r.adaptive_min, r.adaptive_max));
  return env;
}

bool from_job_env(const std::vector<std::string_view>& env, MorphRequest& r) {
  bool any = false;
  for (std::string_view entry : env) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = entry.substr(0, eq);
    for (const MorphOption& o : morph_options()) {
      if (key != o.env) continue;
      set_morph_option(r, o.name, entry.substr(eq + 1));
      any = true;
    }
  }
  if (any) validate_request(r);
  return any;
}

std::string describe(const MorphRequest& r) {
  const std::string model = r.model.size() > 40 ? r.model.substr(0, 37) + "..." : r.model;
  return fmt::format("{} batch {}", model, r.global_batch);
}

}  // namespace morph
