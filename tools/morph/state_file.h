// morphd's state database as morph status, timeline, explain and models read it: --state,
// else morph.conf's StateDatabase (docs/state.md).
#pragma once

#include <string>

#include "daemon/store/state_store.h"
#include "tools/morph/context.h"

namespace morph::cli {

// `state_flag` or StateDatabase, which must exist: an error naming it otherwise (these
// commands act on what morphd wrote, and never create a database).
std::string morphd_state_path(Context& context, const std::string& state_flag);

// Opens morphd_state_path() read-only. A file that does not exist is an error
// naming it, not a new database, and an older schema is not migrated: these commands read
// what morphd wrote.
store::StateStore open_morphd_state(Context& context, const std::string& state_flag);

}  // namespace morph::cli
