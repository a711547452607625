// The plan morphrun starts a step under. The job's record (MORPH_RECORD, which
// spank_morph exports from the job's AdminComment) is the authority; `--plan` serves
// outside a Morph job (tests, plain srun) and, given as well, must agree with it.
#pragma once

#include <optional>
#include <string>

#include "libmorph/launch/step_layout.h"
#include "libmorph/plan/plan.h"
#include "libmorph/record/job_record.h"

namespace morph::launch {

struct PlanSource {
  std::optional<JobRecord> record;  // set inside a Morph job
  ExecutionPlan plan;
  std::string origin;  // "the job's record" or "--plan", for messages
};

// "dp=2,tp=2,pp=1,zero=1" (commas or spaces; keys dp tp pp zero offload gc ga mb mbs, the
// others default to 1/0; mbs defaults so that `global_batch` holds when it is given).
ExecutionPlan parse_plan_option(const std::string& text);

// A MORPH_RECORD whose MORPH_RECORD_JOB is not SLURM_JOB_ID is another job's (the
// surrounding Morph job of a plain job submitted from its script) and is not used.
// Throws morph::Error: no plan at all ("missing plan"), MORPH_PLAN_ERROR set by the
// plugin, an unreadable record, or --plan disagreeing with the record.
PlanSource resolve_plan(const Environment& env, const std::string& plan_option);

}  // namespace morph::launch
