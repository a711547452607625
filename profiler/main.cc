// morph-profile: measures a cluster's hardware for Morph's models. See morph-profile(1).
#include <exception>
#include <iostream>
#include <optional>

#include "config.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "profiler/commands.h"

namespace morph::profile {

std::string subcommand_names() {
  std::string out;
  const std::size_t n = std::size(kSubcommands);
  for (std::size_t i = 0; i < n; ++i) out += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(kSubcommands[i].name);
  return out;
}

}  // namespace morph::profile

namespace {

// The first word that is neither an option nor a known subcommand.
const char* unknown_subcommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--config") {
      ++i;
      continue;
    }
    if (arg.empty() || arg[0] == '-') continue;
    for (const auto& command : morph::profile::kSubcommands)
      if (arg == command.name) return nullptr;
    return argv[i];
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace morph::profile;
  if (const char* word = unknown_subcommand(argc, argv)) {
    std::cerr << "morph-profile: unknown subcommand " << morph::quote(word) << " (expected " << subcommand_names() << ")\n";
    return 2;
  }
  Context context;
  morph::command_line::Program app("morph-profile",
                                   "morph-profile: measure a cluster's topology and bandwidths for Morph");
  app.version(PACKAGE_STRING);
  app.require_subcommand();
  app.config(context.config_path);
  for (const auto& command : kSubcommands) command.add(app, context);
  try {
    if (const std::optional<int> status = app.parse(argc, argv)) return *status;
  } catch (const morph::Error& e) {
    std::cerr << "morph-profile: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "morph-profile: internal error: " << e.what() << '\n';
    return 70;
  }
  return 0;
}
