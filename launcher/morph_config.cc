#include "launcher/morph_config.h"

#include <filesystem>

namespace morph::launcher {

MorphConfig load_launcher_config(const std::string& path_option) {
  const std::string path = morph_conf_path(path_option);
  std::error_code ec;
  if (path == kInstalledMorphConf && !std::filesystem::exists(path, ec)) return MorphConfig{};
  return load_morph_conf(path);
}

}  // namespace morph::launcher
