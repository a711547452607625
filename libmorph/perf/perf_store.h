// Fitted performance models by model name: JSON files written by `morph fit --save`
// ("morph-perf-model/1"), loaded once from a folder (morph.conf PerfModelDir) so that
// slurmctld never reads files while it decides. Models without a file get a FLOP
// estimate of the forward pass and default parameters.
#pragma once

#include <map>
#include <string>

#include "libmorph/cluster/gpu_type.h"
#include "libmorph/model/model_spec.h"
#include "libmorph/perf/perf_model.h"

namespace morph {

std::string perf_model_to_json(const std::string& model, const PerfModel& perf);
// `what` names the source in errors; `model_name` receives the model it was fitted for.
PerfModel perf_model_from_json(const std::string& text, const std::string& what, std::string* model_name);

class PerfStore {
 public:
  // Every *.json of `dir` ("" loads nothing). Throws on an unreadable or malformed file.
  static PerfStore load_dir(const std::string& dir);

  // The fitted model of `model` for sequences of `seq_len` (its forward time scaled by
  // FLOPs when it was fitted at another length), or the estimate at `efficiency` of
  // `gpu`'s peak.
  PerfModel model_for(const ModelSpec& model, std::int64_t seq_len, const GpuType& gpu, double efficiency) const;
  bool has(const std::string& model) const { return fitted_.count(model) > 0; }
  std::size_t size() const { return fitted_.size(); }  // fitted models

 private:
  std::map<std::string, PerfModel> fitted_;  // by catalog name
};

}  // namespace morph
