#include "plugins/spank/spank_state.h"

#include <fmt/format.h>

#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::spank {

State& state() {
  static State s;
  return s;
}

PluginArgs parse_plugin_args(int argc, char** argv) {
  PluginArgs args;
  bool seen_catalog = false, seen_conf = false;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i] != nullptr ? argv[i] : "";
    const std::size_t eq = arg.find('=');
    const std::string_view key = arg.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : arg.substr(eq + 1);
    bool* seen = key == "catalog" ? &seen_catalog : key == "conf" ? &seen_conf : nullptr;
    if (seen == nullptr)
      throw Error(fmt::format("plugstack.conf: unknown argument {} (expected catalog=PATH, conf=PATH)", quote(arg)));
    if (*seen) throw Error(fmt::format("plugstack.conf: {}= given twice", key));
    if (value.empty()) throw Error(fmt::format("plugstack.conf: {}= needs a path", key));
    *seen = true;
    (key == "catalog" ? args.catalog : args.conf) = std::string(value);
  }
  return args;
}

}  // namespace morph::spank
