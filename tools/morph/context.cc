#include "tools/morph/context.h"

#include <cstdlib>

#include "libmorph/perf/perf_store.h"
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
  config_path = morph_conf_path(config_path);
  default_path(catalog_path, "MORPH_CATALOG", std::string(MORPH_PKGDATADIR) + "/models.json");
  default_path(spec_path, "MORPH_ARTIFACT_SPEC", std::string(MORPH_PKGDATADIR) + "/morphling-artifact.json");
}

const MorphConfig& Context::config() {
  if (config_path.empty()) resolve_paths();  // a subcommand that did not (status: without --state)
  if (!config_) config_ = load_morph_conf(config_path);
  return *config_;
}

const Catalog& Context::catalog() {
  if (catalog_path.empty()) resolve_paths();
  if (!catalog_) catalog_ = Catalog::load_file(catalog_path);
  return *catalog_;
}

std::filesystem::path option_folder(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

PerfModel load_perf_model(const std::string& path, std::string* model_name) {
  return perf_model_from_json(read_text_file(path, "--perf"), "--perf: " + path, model_name);
}

}  // namespace morph::cli
