#include "tools/morph/state_file.h"

#include <filesystem>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::cli {

store::StateStore open_morphd_state(Context& context, const std::string& state_flag) {
  const std::string path = !state_flag.empty() ? state_flag : context.config().state_database;
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    throw Error(state_flag.empty()
                    ? fmt::format("{}: no state database at morph.conf's StateDatabase: has morphd run? (or give --state)",
                                  path)
                    : fmt::format("{}: --state: no such state database", path));
  return store::StateStore::open_read_only(path);
}

}  // namespace morph::cli
