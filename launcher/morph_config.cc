#include "launcher/morph_config.h"

#include <cstdlib>
#include <filesystem>

namespace morph::launcher {

MorphConfig load_launcher_config(const std::string& path_option) {
  if (!path_option.empty()) return load_morph_conf(path_option);
  if (const char* env = std::getenv("MORPH_CONF"); env != nullptr && *env != '\0') return load_morph_conf(env);
  const std::string installed = std::string(MORPH_SYSCONFDIR) + "/morph.conf";
  std::error_code ec;
  return std::filesystem::exists(installed, ec) ? load_morph_conf(installed) : MorphConfig{};
}

}  // namespace morph::launcher
