#include "plugins/spank/spank_options.h"

#include <string>
#include <vector>

#include "libmorph/request/morph_request.h"
#include "libmorph/util/error.h"
#include "plugins/common/slurm_host.h"
#include "plugins/spank/spank_state.h"

namespace morph::spank {
namespace {

// Slurm passes the option's `val`: its index in morph_options(). Idempotent: the same
// option given again replaces the value.
int on_option(int val, const char* optarg, int remote) {
  return plugin::guarded("option", -1, [&] {
    const std::vector<MorphOption>& options = morph_options();
    if (val < 0 || static_cast<std::size_t>(val) >= options.size()) return -1;
    try {
      set_morph_option(state().request, options[static_cast<std::size_t>(val)].name, optarg != nullptr ? optarg : "");
    } catch (const Error& e) {
      slurm_error("morph: %s", e.what());
      return remote ? 0 : -1;  // the client has refused it already
    }
    state().any_option = true;
    return 0;
  });
}

}  // namespace

int register_options(spank_t sp) {
  static std::vector<std::string> names;
  static std::vector<struct spank_option> table;
  if (table.empty()) {
    for (const MorphOption& o : morph_options()) names.push_back(std::string("morph-") + o.name);
    int index = 0;
    for (const MorphOption& o : morph_options()) {
      struct spank_option s {};
      s.name = const_cast<char*>(names[static_cast<std::size_t>(index)].c_str());
      s.arginfo = const_cast<char*>(o.arg_info);
      s.usage = const_cast<char*>(o.usage);
      s.has_arg = 1;
      s.val = index++;
      s.cb = on_option;
      table.push_back(s);
    }
  }
  for (struct spank_option& option : table) {
    const spank_err_t rc = spank_option_register(sp, &option);
    if (rc != ESPANK_SUCCESS) {
      slurm_error("morph: --%s: cannot register the option: %s", option.name, spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}

}  // namespace morph::spank
