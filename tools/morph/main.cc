// morph: plan, fit, validate, curve, simulate, reshard and hetero from the command line;
// what morphd did (status, timeline, explain, models); forget, which drops what it learnt
// online. See morph(1).
#include <algorithm>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "tools/morph/commands.h"

namespace {

// CLI11 reports "a subcommand is required" for `morph frobnicate`, and `morph --top 3 plan`
// as the unknown subcommand '3'; name the word or the misplaced option instead, and the
// subcommands `app` has.
bool unknown_subcommand(int argc, char** argv, const morph::command_line::Program& program) {
  const std::vector<std::string> known = program.subcommand_names();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string name = arg.substr(0, arg.find('='));
    if (!arg.empty() && arg[0] == '-') {
      using Own = morph::command_line::Program::OwnOption;
      const Own own = program.own_option(name);
      if (own == Own::valued && name == arg) ++i;  // its value follows
      if (own != Own::none) continue;
      std::cerr << "morph: " << morph::quote(name)
                << " is not an option of morph itself: a subcommand's options follow it (morph SUBCOMMAND " << name
                << " ...)\n";
      return true;
    }
    if (arg.empty()) continue;
    if (std::find(known.begin(), known.end(), arg) != known.end()) return false;
    std::string list;
    for (std::size_t k = 0; k < known.size(); ++k)
      list += (k == 0 ? "" : k + 1 == known.size() ? " or " : ", ") + known[k];
    std::cerr << "morph: unknown subcommand " << morph::quote(arg) << " (expected " << list << ")\n";
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  morph::cli::Context context;
  morph::command_line::Program app("morph",
                                   "morph: execution plans, memory and iteration time of deep-learning training jobs");
  app.version(PACKAGE_STRING);
  app.require_subcommand();
  app.config(context.config_path);
  app.option("--catalog", context.catalog_path,
             "model catalog (default: $MORPH_CATALOG or " MORPH_PKGDATADIR "/models.json)");
  app.option("--spec", context.spec_path,
             "artifact description (default: $MORPH_ARTIFACT_SPEC or " MORPH_PKGDATADIR "/morphling-artifact.json)");
  app.flag("--json", context.json, "machine-readable output");
  morph::cli::add_plan_command(app, context);
  morph::cli::add_fit_command(app, context);
  morph::cli::add_validate_command(app, context);
  morph::cli::add_curve_command(app, context);
  morph::cli::add_simulate_command(app, context);
  morph::cli::add_reshard_command(app, context);
  morph::cli::add_hetero_command(app, context);
#ifdef HAVE_SQLITE
  morph::cli::add_state_commands(app, context);
  morph::cli::add_models_command(app, context);
  morph::cli::add_forget_command(app, context);
#endif
  if (unknown_subcommand(argc, argv, app)) return 2;
  int status = 0;
  try {
    if (const std::optional<int> parsed = app.parse(argc, argv)) status = *parsed;
  } catch (const morph::Error& e) {
    std::cerr << "morph: " << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "morph: internal error: " << e.what() << '\n';
    return 70;
  }
  // Output lost to a full disk or a bad descriptor is a failure, not a success.
  if (!std::cout.flush()) {
    std::cerr << "morph: cannot write standard output\n";
    return status == 0 ? 1 : status;
  }
  return status;
}
