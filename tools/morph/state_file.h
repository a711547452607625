// morphd's state database as morph status, timeline, explain and models read it: --state,
// else morph.conf's StateDatabase (docs/state.md).
#pragma once

#include <string>

#include "daemon/store/state_store.h"
#include "tools/morph/context.h"

namespace morph::cli {

// Opens `state_flag` or StateDatabase read-only. A file that does not exist is an error
// naming it, not a new database, and an older schema is not migrated: these commands read
// what morphd wrote.
store::StateStore open_morphd_state(Context& context, const std::string& state_flag);

}  // namespace morph::cli
