// The applications a trace names, as the scheduler knows them: each artifact workload
// (morphling-artifact.json) under its own name and the names of its trace folders
// ("llama7b" and "llama7"), with a performance model fitted like `morph validate --extra
// K` does (profile plus K trace rows) when the artifact's files are at hand.
#pragma once

#include <map>
#include <string>

#include "libmorph/artifact/artifact_spec.h"
#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_store.h"
#include "libmorph/policy/plan_oracle.h"
#include "libmorph/sim/simulator.h"
#include "libmorph/sim/workload.h"

namespace morph::sim {

struct App {
  ArtifactWorkload artifact;
  policy::AppProfile profile;
  std::string model_source;  // "fitted on ...", "PerfModelDir", "FLOP estimate"
};

// `artifact_dir`: the folder holding profile/ and traces/ ("" : models from `store`, or
// FLOP estimates). `every_row`: fitted on the profile and every trace row instead
// (ValidationOptions::in_sample), the model's floor on what was measured: a simulated
// world that no policy's model equals. Throws when a profile exists but cannot be read.
std::map<std::string, App> artifact_apps(const ArtifactSpec& spec, const Catalog& catalog, const MorphConfig& config,
                                         const std::string& artifact_dir, const PerfStore& store, int extra_rows,
                                         bool every_row = false);

std::map<std::string, policy::AppProfile> profiles_of(const std::map<std::string, App>& apps);

// The job a workload row describes, its request resolved against its application.
// Errors name the row's file:line: an unknown application, a plan that does not fit the
// requested GPUs or does not split the application's global batch.
SimJob sim_job(const TraceJob& row, const std::map<std::string, App>& apps);

}  // namespace morph::sim
