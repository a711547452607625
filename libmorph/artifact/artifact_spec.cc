#include "libmorph/artifact/artifact_spec.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/text_file.h"

namespace morph {
namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw Error(fmt::format("{}: missing \"{}\"", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("{}: \"{}\" has the wrong type", where, key));
  }
}

}  // namespace

const ArtifactWorkload* ArtifactSpec::find_by_profile(const std::string& profile) const {
  for (const ArtifactWorkload& w : workloads)
    if (w.profile == profile) return &w;
  return nullptr;
}

const ArtifactWorkload* ArtifactSpec::find(const std::string& name) const {
  for (const ArtifactWorkload& w : workloads)
    if (w.name == name) return &w;
  return nullptr;
}

ArtifactSpec load_artifact_spec(const std::string& path) {
  const std::string text = read_text_file(path, "artifact description");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  ArtifactSpec spec;
  spec.node_type = field<std::string>(doc, "node_type", path);
  spec.cpus_per_gpu = field<int>(doc, "cpus_per_gpu", path);
  if (doc.contains("skipped_traces")) spec.skipped_traces = field<std::vector<std::string>>(doc, "skipped_traces", path);
  std::size_t index = 0;
  for (const nlohmann::json& j : field<nlohmann::json>(doc, "workloads", path)) {
    const std::string where = fmt::format("{}: workloads[{}]", path, index++);
    ArtifactWorkload w;
    w.name = field<std::string>(j, "name", where);
    w.model = field<std::string>(j, "model", where);
    w.profile = field<std::string>(j, "profile", where);
    w.traces = field<std::vector<std::string>>(j, "traces", where);
    w.global_batch = field<std::int64_t>(j, "global_batch", where);
    w.profile_global_batch = j.contains("profile_global_batch") ? field<std::int64_t>(j, "profile_global_batch", where)
                                                                 : w.global_batch;
    w.micro_batch = field<int>(j, "micro_batch", where);
    w.seq_len = field<std::int64_t>(j, "seq", where);
    const std::string pipeline = field<std::string>(j, "pipeline", where);
    if (pipeline == "1f1b") w.pipeline = PipelineSchedule::one_f_one_b;
    else if (pipeline == "accumulate") w.pipeline = PipelineSchedule::accumulate;
    else throw Error(fmt::format("{}: \"pipeline\" must be \"1f1b\" or \"accumulate\"", where));
    if (w.global_batch < 1 || w.profile_global_batch < 1 || w.micro_batch < 1 || w.seq_len < 1)
      throw Error(fmt::format("{}: batch sizes and seq must be positive", where));
    spec.workloads.push_back(std::move(w));
  }
  return spec;
}

}  // namespace morph
