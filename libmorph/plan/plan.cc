#include "libmorph/plan/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "libmorph/request/limits.h"
#include "libmorph/util/divisors.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph {
namespace {
constexpr std::int64_t kMaxSize = MORPH_MAX_PLAN_VALUE;
}

std::string ExecutionPlan::family() const {
  std::string f;
  if (tp > 1 || pp > 1) f = "3d";
  else if (offload) f = "zero-offload";
  else if (zero_stage > 0) f = "zero-dp";
  else f = "dp";
  if (tp > 1 || pp > 1) {
    if (offload) f += "+offload";
    else if (zero_stage > 0) f += fmt::format("+zero{}", zero_stage);
  }
  if (checkpointing) f += "+gc";
  return f;
}

std::string to_string(const ExecutionPlan& p) {
  return fmt::format("dp={} tp={} pp={} zero={} offload={} gc={} ga={} mb={} mbs={}", p.dp, p.tp,
                     p.pp, p.zero_stage, p.offload ? 1 : 0, p.checkpointing ? 1 : 0, p.ga_steps,
                     p.micro_batches, p.micro_batch_size);
}

std::string brief(const ExecutionPlan& p) {
  std::string s = fmt::format("dp={} tp={} pp={} zero={}", p.dp, p.tp, p.pp, p.zero_stage);
  if (p.offload) s += " offload=1";
  if (p.checkpointing) s += " gc=1";
  if (p.pp > 1) s += fmt::format(" mb={}", p.micro_batches);
  if (p.pp == 1 || p.ga_steps > 1) s += fmt::format(" ga={}", p.ga_steps);
  return s + fmt::format(" mbs={}", p.micro_batch_size);
}

ExecutionPlan with_micro_batch_size(ExecutionPlan plan, std::int64_t per_replica, std::int64_t mbs) {
  const bool pipelined = plan.pp > 1 && !(plan.ga_steps > 1 && plan.micro_batches == 1);
  const int steps = static_cast<int>(per_replica / mbs);
  plan.micro_batch_size = static_cast<int>(mbs);
  plan.micro_batches = pipelined ? steps : 1;
  plan.ga_steps = pipelined ? 1 : steps;
  return plan;
}

std::optional<ExecutionPlan> with_global_batch(const ExecutionPlan& plan, std::int64_t global_batch) {
  const std::int64_t slots = std::int64_t{plan.dp} * plan.micro_batches;  // micro-batches of one accumulation step
  if (slots < 1 || global_batch < slots || global_batch % slots != 0) return std::nullopt;
  const std::int64_t per_slot = global_batch / slots;  // = mbs · ga
  const std::int64_t mbs = largest_divisor_at_most(per_slot, plan.micro_batch_size);
  if (per_slot / mbs > kMaxSize) return std::nullopt;
  ExecutionPlan out = plan;
  out.micro_batch_size = static_cast<int>(mbs);
  out.ga_steps = static_cast<int>(per_slot / mbs);
  return out;
}

void validate_plan_shape(const ExecutionPlan& p, std::string_view what) {
  for (auto [key, v] : {std::pair{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"ga", p.ga_steps},
                        {"mb", p.micro_batches}, {"mbs", p.micro_batch_size}})
    if (v < 1 || v > kMaxSize) throw Error(fmt::format("{}: {}={} is out of range [1, {}]", what, key, v, kMaxSize));
  if (p.zero_stage < 0 || p.zero_stage > 3)
    throw Error(fmt::format("{}: zero={} is not a ZeRO stage (0-3)", what, p.zero_stage));
  if (p.offload && p.zero_stage == 0)
    throw Error(fmt::format("{}: offload=1 needs ZeRO stage 1 or more", what));
  if (p.offload && p.pp > 1) throw Error(fmt::format("{}: offload=1 does not combine with pp>1", what));
  if (p.zero_stage >= 2 && p.pp > 1)
    throw Error(fmt::format("{}: ZeRO stage {} does not combine with pp>1 (use zero=0 or 1)", what, p.zero_stage));
  if (p.micro_batches > 1 && p.pp == 1)
    throw Error(fmt::format("{}: mb={} pipeline micro-batches need pp>1 (use ga= instead)", what, p.micro_batches));
  if (static_cast<std::int64_t>(p.dp) * p.tp * p.pp > kMaxSize)
    throw Error(fmt::format("{}: dp*tp*pp is larger than {}", what, kMaxSize));
  // The global batch, factor by factor: each below 2^20, so no product overflows before it is checked.
  std::int64_t batch = 1;
  for (int factor : {p.dp, p.ga_steps, p.micro_batches, p.micro_batch_size})
    if ((batch *= factor) > MORPH_MAX_BATCH)
      throw Error(fmt::format("{}: dp*ga*mb*mbs (the global batch) is larger than {}", what, MORPH_MAX_BATCH));
}

namespace {

// to_string's keys, in its order.
constexpr const char* kKeys[9] = {"dp", "tp", "pp", "zero", "offload", "gc", "ga", "mb", "mbs"};

int key_index(std::string_view key) {
  for (int i = 0; i < 9; ++i)
    if (key == kKeys[i]) return i;
  return -1;
}

}  // namespace

int plan_value(const ExecutionPlan& p, std::string_view key) {
  const int values[9] = {p.dp, p.tp, p.pp, p.zero_stage, p.offload ? 1 : 0, p.checkpointing ? 1 : 0,
                         p.ga_steps, p.micro_batches, p.micro_batch_size};
  const int index = key_index(key);
  if (index < 0) throw Error(fmt::format("unknown plan key {}", quote(key)));
  return values[index];
}

ExecutionPlan parse_plan(std::string_view text, std::string_view what) {
  ExecutionPlan p;
  bool seen[9] = {};
  std::vector<std::pair<std::string, std::string>> items;  // "dp=2 tp=1", and "dp=2,tp=1" alike
  for (std::string_view item : split(trim(text), ' '))
    if (!item.empty())
      for (auto& kv : parse_key_values(item, ',', what)) items.push_back(std::move(kv));
  for (const auto& [key, value] : items) {
    const int index = key_index(key);
    if (index < 0) throw Error(fmt::format("{}: unknown plan key {}", what, quote(key)));
    if (seen[index]) throw Error(fmt::format("{}: plan key {} given twice", what, key));
    seen[index] = true;
    const std::string where = fmt::format("{}: {}", what, key);
    switch (index) {
      case 0: p.dp = static_cast<int>(parse_int(value, where, 1, kMaxSize)); break;
      case 1: p.tp = static_cast<int>(parse_int(value, where, 1, kMaxSize)); break;
      case 2: p.pp = static_cast<int>(parse_int(value, where, 1, kMaxSize)); break;
      case 3: p.zero_stage = static_cast<int>(parse_int(value, where, 0, 3)); break;
      case 4: p.offload = parse_bool(value, where); break;
      case 5: p.checkpointing = parse_bool(value, where); break;
      case 6: p.ga_steps = static_cast<int>(parse_int(value, where, 1, kMaxSize)); break;
      case 7: p.micro_batches = static_cast<int>(parse_int(value, where, 1, kMaxSize)); break;
      case 8: p.micro_batch_size = static_cast<int>(parse_int(value, where, 1, kMaxSize)); break;
    }
  }
  for (int i = 0; i < 9; ++i)
    if (!seen[i]) throw Error(fmt::format("{}: missing plan key {}=", what, kKeys[i]));
  validate_plan_shape(p, what);
  return p;
}

std::string plan_family(const ExecutionPlan& p) {
  if (p.tp > 1 || p.pp > 1) return p.dp == 1 ? "TP+PP" : "DP+TP+PP";
  if (p.offload) return p.checkpointing ? "ZeRO-Offload+GC" : "ZeRO-Offload";
  if (p.zero_stage > 0) return "ZeRO-DP+GA";
  return p.checkpointing ? "GC" : "DP";
}

}  // namespace morph
