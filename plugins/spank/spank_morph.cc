// spank_morph: the plan-agnostic --morph-* options of sbatch, salloc and srun. One small
// file per Slurm context behind this dispatch (the layout of NVIDIA's pyxis):
// spank_options (registration, parsing), spank_client (sbatch/salloc/srun: check and
// hand to slurmctld), spank_remote (slurmstepd: export the plan). See spank_morph(8).
extern "C" {
#include <slurm/spank.h>
}

#include "libmorph/util/error.h"
#include "plugins/common/slurm_host.h"
#include "plugins/spank/spank_client.h"
#include "plugins/spank/spank_options.h"
#include "plugins/spank/spank_remote.h"
#include "plugins/spank/spank_state.h"

// SPANK_PLUGIN() would give these internal linkage in C++: spelled out, extern "C".
extern "C" {
MORPH_PLUGIN_EXPORT extern const char plugin_name[];
MORPH_PLUGIN_EXPORT extern const char plugin_type[];
MORPH_PLUGIN_EXPORT extern const unsigned int plugin_version;
MORPH_PLUGIN_EXPORT extern const unsigned int spank_plugin_version;
const char plugin_name[] = "morph";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
const unsigned int spank_plugin_version = 1;

MORPH_PLUGIN_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av);
MORPH_PLUGIN_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char** av);
MORPH_PLUGIN_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char** av);
MORPH_PLUGIN_EXPORT int slurm_spank_exit(spank_t sp, int ac, char** av);
}

using morph::plugin::guarded;

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("slurm_spank_init", -1, [&] {
    try {
      morph::spank::state().args = morph::spank::parse_plugin_args(ac, av);
    } catch (const morph::Error& e) {
      slurm_error("morph: %s", e.what());
      return -1;
    }
    switch (spank_context()) {
      case S_CTX_ALLOCATOR:
      case S_CTX_LOCAL:
      case S_CTX_REMOTE:
        return morph::spank::register_options(sp);
      default:
        return 0;
    }
  });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  return guarded("slurm_spank_init_post_opt", -1, [&] {
    const spank_context_t context = spank_context();
    if (context != S_CTX_ALLOCATOR && context != S_CTX_LOCAL) return 0;
    return morph::spank::submit_request(sp);
  });
}

extern "C" int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  return guarded("slurm_spank_user_init", -1, [&] {
    if (!spank_remote(sp)) return 0;
    return morph::spank::export_plan(sp);
  });
}

extern "C" int slurm_spank_exit(spank_t sp, int ac, char** av) {
  (void)sp;
  (void)ac;
  (void)av;
  return 0;
}
