#include "libmorph/perf/perf_store.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/perf/fit_evidence.h"
#include "libmorph/request/limits.h"
#include "libmorph/util/error.h"
#include "libmorph/util/text_file.h"

namespace morph {
namespace {

constexpr double kMaxForwardMs = 1e9;  // a forward pass of 11 days: far past any real model
constexpr std::size_t kFirstBandwidthFactor = 7;  // k_dp

nlohmann::json params_to_json(const PerfParams& p) {
  nlohmann::json j;
  const auto k = p.to_array();
  const auto& info = perf_param_info();
  for (std::size_t i = 0; i < k.size(); ++i) j[info[i].name] = k[i];
  return j;
}

PerfParams params_from_json(const nlohmann::json& params, const std::string& what) {
  std::array<double, PerfParams::kCount> k{};
  const auto& info = perf_param_info();
  const auto fallback = PerfParams{}.to_array();
  for (std::size_t i = 0; i < k.size(); ++i) {
    // The bandwidth factors (k_dp and after) are optional: models saved before them
    // load with the factors at 1, i.e. the configured bandwidths.
    k[i] = i >= kFirstBandwidthFactor && !params.contains(info[i].name) ? fallback[i]
                                                                         : params.at(info[i].name).get<double>();
    if (!(k[i] >= info[i].lower && k[i] <= info[i].upper))
      throw Error(fmt::format("{}: {}={} is outside [{}, {}]", what, info[i].name, k[i], info[i].lower, info[i].upper));
  }
  return PerfParams::from_array(k.data());
}

}  // namespace

std::string perf_model_to_json(const std::string& model, const PerfModel& perf) {
  nlohmann::json j;
  j["format"] = "morph-perf-model/1";
  j["model"] = model;
  j["forward"] = {{"intercept_ms", perf.forward.intercept_ms},
                  {"per_sample_ms", perf.forward.per_sample_ms},
                  {"reference_speed", perf.forward.reference_speed}};
  if (perf.forward.seq_len > 0) j["forward"]["seq_len"] = perf.forward.seq_len;
  j["params"] = params_to_json(perf.params);
  if (perf.evidence && !perf.evidence->empty()) j["evidence"] = evidence_to_json(*perf.evidence);
  if (perf.prior.weight > 0) j["prior"] = {{"weight", perf.prior.weight}, {"centre", params_to_json(perf.prior.centre)}};
  return j.dump(2) + "\n";
}

PerfModel perf_model_from_json(const std::string& text, const std::string& what, std::string* model_name) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("format", "") != "morph-perf-model/1")
      throw Error(fmt::format("{}: not a morph performance model (format morph-perf-model/1)", what));
    PerfModel perf;
    perf.forward.intercept_ms = j.at("forward").at("intercept_ms").get<double>();
    perf.forward.per_sample_ms = j.at("forward").at("per_sample_ms").get<double>();
    perf.forward.reference_speed = j.at("forward").at("reference_speed").get<double>();
    if (!(perf.forward.per_sample_ms > 0) || perf.forward.intercept_ms < 0 || !(perf.forward.reference_speed > 0))
      throw Error(fmt::format("{}: the forward model must be positive", what));
    // Beyond these a prediction overflows to infinity, and inf - inf is NaN downstream.
    if (!(perf.forward.intercept_ms <= kMaxForwardMs) || !(perf.forward.per_sample_ms <= kMaxForwardMs) ||
        !(perf.forward.reference_speed <= 1e6))
      throw Error(fmt::format("{}: forward: intercept_ms {:g} and per_sample_ms {:g} must be at most {:g} ms, "
                              "reference_speed {:g} at most 1e6",
                              what, perf.forward.intercept_ms, perf.forward.per_sample_ms, kMaxForwardMs,
                              perf.forward.reference_speed));
    // Optional: models saved before it are taken at any sequence length, as they were.
    if (const auto& forward = j.at("forward"); forward.contains("seq_len")) {
      perf.forward.seq_len = forward.at("seq_len").get<std::int64_t>();
      if (perf.forward.seq_len < 1 || perf.forward.seq_len > MORPH_MAX_SEQ)
        throw Error(fmt::format("{}: forward: seq_len {} is outside [1, {}]", what, perf.forward.seq_len, MORPH_MAX_SEQ));
    }
    perf.params = params_from_json(j.at("params"), what);
    // Optional: models saved before it, and estimates, refit on what jobs report alone.
    if (j.contains("evidence"))
      perf.evidence = std::make_shared<const FitEvidence>(evidence_from_json(j["evidence"], what));
    // Optional: a fit without a prior (a profile's) saves none.
    if (j.contains("prior")) {
      const nlohmann::json& prior = j["prior"];
      perf.prior.weight = prior.at("weight").get<double>();
      if (!(perf.prior.weight > 0) || !std::isfinite(perf.prior.weight))
        throw Error(fmt::format("{}: prior: weight {} must be a finite number > 0", what, perf.prior.weight));
      perf.prior.centre = params_from_json(prior.at("centre"), what + ": prior: centre");
    }
    if (model_name != nullptr) *model_name = j.at("model").get<std::string>();
    return perf;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed: {}", what, e.what()));
  }
}

PerfStore PerfStore::load_dir(const std::string& dir) {
  PerfStore store;
  if (dir.empty()) return store;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw Error(fmt::format("PerfModelDir: {}: not a folder", dir));
  std::map<std::string, std::string> files;  // model: the file that fits it
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    std::string model;
    PerfModel perf = perf_model_from_json(read_text_file(path, "PerfModelDir"), path, &model);
    // Which of two would win depends on the folder's order: a backup copy could replace the model in use.
    if (const auto [it, fresh] = files.emplace(model, path); !fresh)
      throw Error(fmt::format("PerfModelDir: {} and {} both fit model {}; keep one", std::min(it->second, path),
                              std::max(it->second, path), model));
    store.fitted_[model] = perf;
  }
  if (ec) throw Error(fmt::format("PerfModelDir: {}: {}", dir, ec.message()));
  return store;
}

PerfModel PerfStore::model_for(const ModelSpec& model, std::int64_t seq_len, const GpuType& gpu,
                               double efficiency) const {
  if (auto it = fitted_.find(model.name); it != fitted_.end()) {
    PerfModel perf = it->second;
    perf.forward = perf.forward.at_sequence(model, seq_len);  // fitted at another length: scaled by FLOPs
    return perf;
  }
  return PerfModel{estimate_forward_model(model, seq_len, gpu, efficiency), PerfParams{}};
}

}  // namespace morph
