// How the Morphling artifact's measurements were taken, as far as its files do not say:
// per workload the catalog model, the global batch, micro-batch and sequence length, and
// how its pipelines were scheduled. Loaded from $(pkgdatadir)/morphling-artifact.json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace morph {

enum class PipelineSchedule {
  one_f_one_b,  // Megatron: the replica's micro-batches flow through one 1F1B pipeline
  accumulate,   // one micro-batch per pipeline flush, gradient accumulation around it
};

struct ArtifactWorkload {
  std::string name;                 // e.g. "llama7b-bsz16"
  std::string model;                // catalog name
  std::string profile;              // profile/<profile>/
  std::vector<std::string> traces;  // traces/<trace>/placements.csv
  std::int64_t global_batch = 0;
  std::int64_t profile_global_batch = 0;  // batch of the profile runs (default: global_batch)
  int micro_batch = 1;
  std::int64_t seq_len = 0;
  PipelineSchedule pipeline = PipelineSchedule::one_f_one_b;
};

struct ArtifactSpec {
  std::string node_type;  // morph.conf NodeType of the artifact's servers
  int cpus_per_gpu = 4;   // CPU threads per GPU where a file does not say
  std::vector<ArtifactWorkload> workloads;
  std::vector<std::string> skipped_traces;  // trace folders without a profile

  const ArtifactWorkload* find_by_profile(const std::string& profile) const;
  const ArtifactWorkload* find(const std::string& name) const;
};

ArtifactSpec load_artifact_spec(const std::string& path);

}  // namespace morph
