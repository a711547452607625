#include "libmorph/sim/apps.h"

#include <filesystem>

#include <fmt/format.h>

#include "libmorph/artifact/artifact_rows.h"
#include "libmorph/artifact/validation.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::sim {
namespace fs = std::filesystem;

std::map<std::string, App> artifact_apps(const ArtifactSpec& spec, const Catalog& catalog, const MorphConfig& config,
                                         const std::string& artifact_dir, const PerfStore& store, int extra_rows,
                                         bool every_row) {
  const NodeType* node = config.cluster.find_node_type(spec.node_type);
  if (node == nullptr) throw Error(fmt::format("the configuration has no NodeType {}", quote(spec.node_type)));
  const GpuType& gpu = config.cluster.gpu_of(*node);
  std::map<std::string, App> apps;
  for (const ArtifactWorkload& w : spec.workloads) {
    App app;
    app.artifact = w;
    const ModelSpec model = catalog.resolve(w.model, fmt::format("artifact workload {}", w.name));
    app.profile.workload = Workload{model, w.global_batch, w.seq_len};
    const fs::path profile = fs::path(artifact_dir) / "profile" / w.profile;
    if (!artifact_dir.empty() && fs::is_directory(profile)) {
      std::vector<std::string> traces;
      for (const std::string& t : w.traces) {
        const fs::path f = fs::path(artifact_dir) / "traces" / t / "placements.csv";
        if (fs::exists(f)) traces.push_back(f.string());
      }
      ValidationOptions options;
      options.extra_rows = every_row ? 0 : extra_rows;
      options.in_sample = every_row;
      const WorkloadValidation v = fit_workload(profile.string(), traces, w, spec, catalog, config, options);
      app.profile.perf = fitted_perf_model(v);
      app.model_source = every_row ? fmt::format("fitted on profile/{} + every trace row", w.profile)
                                   : fmt::format("fitted on profile/{} + {} trace rows", w.profile, extra_rows);
    } else {
      app.profile.perf = store.model_for(model, w.seq_len, gpu, config.compute_efficiency);
      app.model_source = store.has(model.name) ? "PerfModelDir" : "FLOP estimate";
    }
    for (const std::string& name : w.traces) apps.emplace(name, app);
    apps.emplace(w.name, std::move(app));
  }
  return apps;
}

std::map<std::string, policy::AppProfile> profiles_of(const std::map<std::string, App>& apps) {
  std::map<std::string, policy::AppProfile> out;
  for (const auto& [name, app] : apps) out.emplace(name, app.profile);
  return out;
}

SimJob sim_job(const TraceJob& row, const std::map<std::string, App>& apps) {
  auto it = apps.find(row.app);
  if (it == apps.end()) {
    std::string known;
    for (const auto& [name, app] : apps) known += (known.empty() ? "" : ", ") + name;
    throw Error(fmt::format("{}: unknown application {} (known: {})", row.where, quote(row.app), known));
  }
  const App& app = it->second;
  SimJob job;
  job.where = row.where;
  job.partitions = row.partition;
  policy::JobState& s = job.state;
  s.id = row.name;
  s.app = row.app;
  s.tenant = row.tenant;
  s.sla = row.guaranteed ? Sla::guaranteed : Sla::best_effort;
  s.workload = app.profile.workload;
  s.requested_plan = artifact_plan(row.exec_plan, row.gpus, app.artifact.global_batch, app.artifact, row.where);
  validate_plan_shape(s.requested_plan, row.where);
  if (s.requested_plan.global_batch() != app.artifact.global_batch)
    throw Error(fmt::format("{}: exec_plan {} on {} GPUs does not split the global batch {} of {}", row.where,
                            quote(row.exec_plan), row.gpus, app.artifact.global_batch, row.app));
  s.requested_cpus = row.cpus;
  s.submit_time_s = row.submit_s;
  job.steps = row.steps;
  job.duration_s = row.duration_s;
  s.declared_iterations = row.steps;  // known exactly unless declare_lengths() says otherwise
  return job;
}

}  // namespace morph::sim
