// What every morph subcommand needs: the configuration, the catalog and output flags,
// located from flags, the environment, or the installed defaults.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/perf/perf_model.h"

namespace morph::cli {

struct Context {
  std::string config_path;   // --config, $MORPH_CONF, $(sysconfdir)/morph.conf
  std::string catalog_path;  // --catalog, $MORPH_CATALOG, $(pkgdatadir)/models.json
  std::string spec_path;     // --spec, $MORPH_ARTIFACT_SPEC, $(pkgdatadir)/morphling-artifact.json
  bool json = false;

  void resolve_paths();
  const MorphConfig& config();
  const Catalog& catalog();

 private:
  std::optional<MorphConfig> config_;
  std::optional<Catalog> catalog_;
};

// The folder an option names, absolute and without a trailing slash, so that its parents
// are the folders above it ("traces/" as a shell completes it, like "traces").
std::filesystem::path option_folder(const std::string& path);

// A performance model saved by morph fit --save.
PerfModel load_perf_model(const std::string& path, std::string* model_name);

}  // namespace morph::cli
