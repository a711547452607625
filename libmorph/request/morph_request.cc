#include "libmorph/request/morph_request.h"

#include <cctype>

#include <fmt/format.h>

#include "libmorph/model/model_spec.h"
#include "libmorph/plan/plan.h"
#include "libmorph/plan/plan_features.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {

constexpr std::int64_t kMaxBatch = std::int64_t{1} << 30;
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 24;
constexpr int kMaxGpus = 65536;

const std::vector<MorphOption> kOptions{
    {"model", "NAME|SPEC", "model to train: a catalog name or layers=..,hidden=..,heads=..,seq=..,vocab=..",
     "MORPH_REQUEST_MODEL"},
    {"batch", "N", "global batch size (samples per iteration), kept constant across plans", "MORPH_REQUEST_BATCH"},
    {"seq", "N", "sequence length (default: the model's)", "MORPH_REQUEST_SEQ"},
    {"sla", "guaranteed|best-effort", "service level: guaranteed jobs never run slower than their baseline",
     "MORPH_REQUEST_SLA"},
    {"plans", "LIST", "allowed plan features: dp,zero,offload,tp,pp,3d,gc,all", "MORPH_REQUEST_PLANS"},
    {"gpus", "MIN[-MAX]", "bounds on the number of GPUs", "MORPH_REQUEST_GPUS"},
    {"gpu-type", "LIST", "allowed GPU types (comma separated)", "MORPH_REQUEST_GPU_TYPE"},
    {"framework", "megatron|deepspeed|torch", "training framework the launcher renders arguments for",
     "MORPH_REQUEST_FRAMEWORK"},
    {"plan", "PLAN", "with --gres/--gpus: the plan of that request, the job's SLA baseline (dp=4,tp=2,...)",
     "MORPH_REQUEST_PLAN"},
};

std::string where(std::string_view name) { return fmt::format("--morph-{}", name); }

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

std::string parse_model(std::string_view value) {
  if (value.find('=') != std::string_view::npos) {
    parse_inline_model(value, where("model"));  // validates every field
    return std::string(value);
  }
  if (!valid_name(value))
    throw Error(fmt::format("{}: {} is not a model name (letters, digits, '.', '-', '_') or an inline spec "
                            "layers=..,hidden=..,heads=..,seq=..",
                            where("model"), quote(value)));
  return std::string(value);
}

void parse_gpus(MorphRequest& r, std::string_view value) {
  const std::size_t dash = value.find('-');
  const std::string what = where("gpus");
  r.gpus_min = static_cast<int>(parse_int(value.substr(0, dash), what, 1, kMaxGpus));
  r.gpus_max = dash == std::string_view::npos ? r.gpus_min
                                              : static_cast<int>(parse_int(value.substr(dash + 1), what, 1, kMaxGpus));
  if (r.gpus_max < r.gpus_min)
    throw Error(fmt::format("{}: {} has MAX below MIN", what, quote(value)));
}

// "dp=4,tp=2" -> the one-line plan form; keys not given are left to Morph.
std::string parse_baseline_plan(std::string_view value) {
  std::string text;
  for (const auto& [key, v] : parse_key_values(value, ',', where("plan"))) {
    static constexpr const char* kKeys[] = {"dp", "tp", "pp", "zero", "offload", "gc", "ga", "mb", "mbs"};
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) throw Error(fmt::format("{}: unknown plan key {}", where("plan"), quote(key)));
    parse_int(v, fmt::format("{}: {}", where("plan"), key), 0, 1 << 20);
    text += (text.empty() ? "" : ",") + key + "=" + v;
  }
  return text;
}

}  // namespace

const char* to_string(Sla sla) { return sla == Sla::guaranteed ? "guaranteed" : "best-effort"; }

const char* to_string(Framework f) {
  return f == Framework::megatron ? "megatron" : f == Framework::deepspeed ? "deepspeed" : "torch";
}

const std::vector<MorphOption>& morph_options() { return kOptions; }

void set_morph_option(MorphRequest& r, std::string_view name, std::string_view raw) {
  if (raw.size() > kMaxOptionValue)
    throw Error(fmt::format("{}: value of {} bytes is too long (at most {})", where(name), raw.size(), kMaxOptionValue));
  const std::string_view value = trim(raw);
  if (value.empty()) throw Error(fmt::format("{}: empty value", where(name)));
  for (char c : value)
    if (!std::isprint(static_cast<unsigned char>(c)) || c == ' ')
      throw Error(fmt::format("{}: {} contains spaces or control characters", where(name), quote(value)));
  const std::string what = where(name);
  if (name == "model") {
    r.model = parse_model(value);
  } else if (name == "batch") {
    r.global_batch = parse_int(value, what, 1, kMaxBatch);
  } else if (name == "seq") {
    r.seq_len = parse_int(value, what, 1, kMaxSeq);
  } else if (name == "sla") {
    const std::string v = to_lower(value);
    if (v == "guaranteed") r.sla = Sla::guaranteed;
    else if (v == "best-effort" || v == "besteffort") r.sla = Sla::best_effort;
    else throw Error(fmt::format("{}: {} is not guaranteed or best-effort", what, quote(value)));
    r.sla_given = true;
  } else if (name == "plans") {
    parse_plan_features(std::string(value), what);
    r.plans = to_lower(value);
  } else if (name == "gpus") {
    parse_gpus(r, value);
  } else if (name == "gpu-type") {
    r.gpu_types.clear();
    for (std::string_view t : split(value, ',')) {
      if (!valid_name(t)) throw Error(fmt::format("{}: {} is not a GPU type name", what, quote(t)));
      r.gpu_types.push_back(to_lower(t));
    }
  } else if (name == "framework") {
    const std::string v = to_lower(value);
    if (v == "megatron") r.framework = Framework::megatron;
    else if (v == "deepspeed") r.framework = Framework::deepspeed;
    else if (v == "torch") r.framework = Framework::torch;
    else throw Error(fmt::format("{}: {} is not megatron, deepspeed or torch", what, quote(value)));
  } else if (name == "plan") {
    r.baseline_plan = parse_baseline_plan(value);
  } else {
    throw Error(fmt::format("--morph-{}: unknown option", name));
  }
}

void validate_request(const MorphRequest& r) {
  if (r.model.empty()) throw Error("--morph-model: missing (every Morph job names its model)");
  if (r.global_batch < 1) throw Error("--morph-batch: missing (the global batch size is required)");
  if (r.gpus_max > 0 && r.gpus_max < r.gpus_min) throw Error("--morph-gpus: MAX is below MIN");
}

std::vector<std::pair<std::string, std::string>> to_job_env(const MorphRequest& r) {
  const MorphRequest defaults;
  std::vector<std::pair<std::string, std::string>> env;
  auto add = [&](std::size_t option, std::string value) { env.emplace_back(kOptions[option].env, std::move(value)); };
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
  return env;
}

bool from_job_env(const std::vector<std::string_view>& env, MorphRequest& r) {
  bool any = false;
  for (std::string_view entry : env) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = entry.substr(0, eq);
    for (const MorphOption& o : kOptions) {
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
