/* spank_morph: dispatch of the SPANK entry points to one file per context. */
#include "plugins/spank/spank_morph.h"

#include <string.h>

SPANK_PLUGIN(morph, 1)

struct morph_spank_state morph_spank;

int slurm_spank_init(spank_t sp, int ac, char **av) {
  if (morph_spank_parse_args(ac, av, &morph_spank.args) != 0) return -1;
  switch (spank_context()) {
    case S_CTX_ALLOCATOR:
    case S_CTX_LOCAL:
    case S_CTX_REMOTE:
      return morph_spank_register_options(sp);
    default:
      return 0;
  }
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  const spank_context_t context = spank_context();
  if (context != S_CTX_ALLOCATOR && context != S_CTX_LOCAL) return 0;
  return morph_spank_submit(sp);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp)) return 0;
  return morph_spank_export_plan(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
  (void)sp;
  (void)ac;
  (void)av;
  return 0;
}
