#include "libmorph/launch/plan_source.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::launch {

ExecutionPlan parse_plan_option(const std::string& text) {
  ExecutionPlan p;
  std::string spaced = text;
  for (char& c : spaced)
    if (c == ',') c = ' ';
  bool any = false;
  for (std::string_view item : split(spaced, ' ')) {
    item = trim(item);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw Error(fmt::format("--plan {}: {} is not KEY=VALUE", quote(text), quote(item)));
    const std::string key(item.substr(0, eq));
    const std::string what = fmt::format("--plan {}", key);
    const auto value = [&](int min, int max) { return static_cast<int>(parse_int(item.substr(eq + 1), what, min, max)); };
    if (key == "dp") p.dp = value(1, 1 << 16);
    else if (key == "tp") p.tp = value(1, 1024);
    else if (key == "pp") p.pp = value(1, 1024);
    else if (key == "zero") p.zero_stage = value(0, 3);
    else if (key == "offload") p.offload = value(0, 1) == 1;
    else if (key == "gc") p.checkpointing = value(0, 1) == 1;
    else if (key == "ga") p.ga_steps = value(1, 1 << 16);
    else if (key == "mb") p.micro_batches = value(1, 1 << 16);
    else if (key == "mbs") p.micro_batch_size = value(1, 1 << 20);
    else throw Error(fmt::format("--plan {}: unknown key {} (dp, tp, pp, zero, offload, gc, ga, mb, mbs)", quote(text), quote(key)));
    any = true;
  }
  if (!any) throw Error("--plan: empty");
  validate_plan_shape(p, "--plan");
  return p;
}

PlanSource resolve_plan(const Environment& env, const std::string& plan_option) {
  if (const auto it = env.find("MORPH_PLAN_ERROR"); it != env.end() && !it->second.empty())
    throw Error(it->second);
  PlanSource source;
  // A record spank_morph gave another job (the surrounding Morph job of a plain job
  // submitted from its script, under --export=ALL) is not this job's plan.
  const auto job = env.find("SLURM_JOB_ID"), of = env.find("MORPH_RECORD_JOB");
  const bool others = job != env.end() && of != env.end() && !of->second.empty() && of->second != job->second;
  if (const auto it = env.find("MORPH_RECORD"); it != env.end() && !it->second.empty() && !others) {
    try {
      source.record = parse_admin_comment(it->second);
    } catch (const Error& e) {
      throw Error(fmt::format("MORPH_RECORD: the job's record cannot be read: {}", e.what()));
    }
    source.plan = source.record->current.plan;
    source.origin = "the job's record";
    if (!plan_option.empty()) {
      const ExecutionPlan given = parse_plan_option(plan_option);
      if (given.dp != source.plan.dp || given.tp != source.plan.tp || given.pp != source.plan.pp ||
          given.zero_stage != source.plan.zero_stage)
        throw Error(fmt::format("--plan {} disagrees with the job's record ({}); the record is the authority: drop --plan",
                                quote(plan_option), to_string(source.plan)));
    }
    return source;
  }
  if (plan_option.empty())
    throw Error("missing plan: this is not a Morph job (no MORPH_RECORD from spank_morph) and --plan was not given");
  source.plan = parse_plan_option(plan_option);
  source.origin = "--plan";
  return source;
}

}  // namespace morph::launch
