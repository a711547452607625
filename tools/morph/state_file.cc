#include "tools/morph/state_file.h"

#include <filesystem>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::cli {

std::string morphd_state_path(Context& context, const std::string& state_flag) {
  const std::string path = !state_flag.empty() ? state_flag : context.config().state_database;
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    throw Error(state_flag.empty()
                    ? fmt::format("{}: no state database at morph.conf's StateDatabase: has morphd run? (or give --state)",
                                  path)
                    : fmt::format("{}: --state: no such state database", path));
  return path;
}

store::StateStore open_morphd_state(Context& context, const std::string& state_flag) {
  return store::StateStore::open_read_only(morphd_state_path(context, state_flag));
}

}  // namespace morph::cli
