#include "tools/morph/context.h"

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "libmorph/util/text_file.h"

namespace morph::cli {
namespace {

void default_path(std::string& path, const char* env, const std::string& installed) {
  if (!path.empty()) return;
  if (const char* value = std::getenv(env); value != nullptr && *value != '\0') path = value;
  else path = installed;
}

}  // namespace

void Context::resolve_paths() {
  default_path(config_path, "MORPH_CONF", std::string(MORPH_SYSCONFDIR) + "/morph.conf");
  default_path(catalog_path, "MORPH_CATALOG", std::string(MORPH_PKGDATADIR) + "/models.json");
  default_path(spec_path, "MORPH_ARTIFACT_SPEC", std::string(MORPH_PKGDATADIR) + "/morphling-artifact.json");
}

const MorphConfig& Context::config() {
  if (!config_) config_ = load_morph_conf(config_path);
  return *config_;
}

const Catalog& Context::catalog() {
  if (!catalog_) catalog_ = Catalog::load_file(catalog_path);
  return *catalog_;
}

std::string perf_model_to_json(const std::string& model, const PerfModel& perf) {
  nlohmann::json j;
  j["format"] = "morph-perf-model/1";
  j["model"] = model;
  j["forward"] = {{"intercept_ms", perf.forward.intercept_ms},
                  {"per_sample_ms", perf.forward.per_sample_ms},
                  {"reference_speed", perf.forward.reference_speed}};
  const auto k = perf.params.to_array();
  const auto& info = perf_param_info();
  for (std::size_t i = 0; i < k.size(); ++i) j["params"][info[i].name] = k[i];
  return j.dump(2) + "\n";
}

PerfModel load_perf_model(const std::string& path, std::string* model_name) {
  const std::string text = read_text_file(path, "--perf");
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.value("format", "") != "morph-perf-model/1")
      throw Error(fmt::format("--perf: {}: not a morph performance model (format morph-perf-model/1)", path));
    PerfModel perf;
    perf.forward.intercept_ms = j.at("forward").at("intercept_ms").get<double>();
    perf.forward.per_sample_ms = j.at("forward").at("per_sample_ms").get<double>();
    perf.forward.reference_speed = j.at("forward").at("reference_speed").get<double>();
    std::array<double, PerfParams::kCount> k{};
    const auto& info = perf_param_info();
    for (std::size_t i = 0; i < k.size(); ++i) {
      k[i] = j.at("params").at(info[i].name).get<double>();
      if (!(k[i] >= info[i].lower && k[i] <= info[i].upper))
        throw Error(fmt::format("--perf: {}: {}={} is outside [{}, {}]", path, info[i].name, k[i], info[i].lower,
                                info[i].upper));
    }
    if (!(perf.forward.per_sample_ms > 0) || perf.forward.intercept_ms < 0 || !(perf.forward.reference_speed > 0))
      throw Error(fmt::format("--perf: {}: the forward model must be positive", path));
    perf.params = PerfParams::from_array(k.data());
    if (model_name != nullptr) *model_name = j.at("model").get<std::string>();
    return perf;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("--perf: {}: malformed: {}", path, e.what()));
  }
}

}  // namespace morph::cli
