// What a user asks for with the plan-agnostic --morph-* options: the model, the global
// batch and the constraints, never a GPU count or a plan. The option table and the
// checks of their values are C (option_check.h), shared with the SPANK plugin.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace morph {

enum class Sla { best_effort, guaranteed };
enum class Framework { megatron, deepspeed, torch };

const char* to_string(Sla sla);
const char* to_string(Framework framework);

// --morph-adaptive-batch=MIN:MAX, as the C check accepts it (1 <= MIN <= MAX).
struct AdaptiveBatchRange {
  std::int64_t min_batch = 0;
  std::int64_t max_batch = 0;
};

// The value of --morph-adaptive-batch (and of the trainer's --adaptive-batch); throws
// morph::Error with the C check's message when it is not acceptable.
AdaptiveBatchRange parse_adaptive_batch(std::string_view text);

struct MorphRequest {
  std::string model;               // catalog name or inline spec
  std::int64_t global_batch = 0;   // required; kept constant across plans
  std::int64_t seq_len = 0;        // 0: the model's default
  Sla sla = Sla::best_effort;
  bool sla_given = false;          // false: morph.conf DefaultSla decides
  std::string plans = "all";       // allowed plan features (plan_features.h)
  int gpus_min = 1;
  int gpus_max = 0;                // 0: no upper bound
  std::vector<std::string> gpu_types;  // empty: any
  Framework framework = Framework::megatron;
  std::string baseline_plan;       // user's own plan with --gres (SLA baseline), compact form
  std::int64_t iterations = 0;     // training iterations the user declares; 0: not declared
  // --morph-adaptive-batch=MIN:MAX: the trainer adapts the global batch within these
  // bounds from global_batch on (JABAS, libmorph/adaptive/batch_controller.h); 0: fixed.
  std::int64_t adaptive_min = 0;
  std::int64_t adaptive_max = 0;

  bool adaptive_batch() const { return adaptive_max > 0; }
  // Whether the trainer changes the batch as it runs, so that morphd may plan the job for
  // another batch within the bounds: Morph's torch trainers do, Megatron-LM and
  // DeepSpeed run the batch they are given.
  bool trainer_adapts_batch() const { return adaptive_batch() && framework == Framework::torch; }

  friend bool operator==(const MorphRequest&, const MorphRequest&) = default;
};

struct MorphOption {
  const char* name;      // without the leading "--morph-"
  const char* arg_info;  // e.g. "N"
  const char* usage;
  const char* env;       // name in the job's SPANK environment
};

// Every option, in the order they are documented.
const std::vector<MorphOption>& morph_options();

// Checks (option_check.h, the one definition of a valid value) and stores `value` of
// option `name` ("model", "batch", ...) in `request`. Throws morph::Error
// "--morph-NAME: ..." naming what is wrong.
void set_morph_option(MorphRequest& request, std::string_view name, std::string_view value);

// The one parser of the integers of a request (option_check.h morph_parse_integer), for
// the morph command's flags as for the plugins: decimal, an optional '+', nothing else.
// Throws morph::Error "WHAT: ..." when `text` is not an integer in [min, max].
std::int64_t request_integer(std::string_view what, std::string_view text, std::int64_t min, std::int64_t max);

// Checks what needs all options together: a batch was given, MIN <= MAX, ...
void validate_request(const MorphRequest& request);

// The request as NAME=value pairs of the job's SPANK environment (only options that
// differ from the defaults), and back. from_job_env() ignores entries that are not
// Morph's and returns false when the job carries no Morph request.
std::vector<std::pair<std::string, std::string>> to_job_env(const MorphRequest& request);
bool from_job_env(const std::vector<std::string_view>& env, MorphRequest& request);

// "gpt2-1.5b batch 16" for messages.
std::string describe(const MorphRequest& request);

}  // namespace morph
