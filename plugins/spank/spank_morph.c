/* spank_morph: dispatch of the SPANK entry points to one file per context. */
#include "plugins/spank/spank_morph.h"

#include <stdlib.h>
#include <string.h>

SPANK_PLUGIN(morph, 1)

struct morph_spank_state morph_spank;

int slurm_spank_init(spank_t sp, int ac, char **av) {
  if (morph_spank_parse_args(ac, av, &morph_spank.args) != 0) {
    /* In slurmstepd a failure would fail every step of every job, Morph's or not, and
     * drain the node: Morph jobs alone fail, each task saying why (spank_remote.c). */
    if (spank_context() != S_CTX_REMOTE) return -1;
    morph_spank.bad_args = 1;
  }
  switch (spank_context()) {
    case S_CTX_LOCAL:
      if (morph_spank_register_options(sp) != 0) return -1;
      return morph_spank_srun_defaults();
    case S_CTX_ALLOCATOR:
      morph_spank_forget_surrounding_job();
      return morph_spank_register_options(sp);
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
  /* A heterogeneous job (sbatch A : B) runs this once per component, and the option
   * values of one stay for the next: Morph sizes one job of one kind of task. Not srun's:
   * a heterogeneous step (srun A : B) in a Morph job reads the job's own options from its
   * environment for every component, and morph_spank_submit checks each component alone. */
  if (context == S_CTX_ALLOCATOR && ++morph_spank.components > 1 && morph_spank.any_option) {
    slurm_error("morph: --morph-* options size a whole job; they cannot be given to a heterogeneous job "
                "(components separated by ':')");
    return -1;
  }
  return morph_spank_submit(sp);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp)) return 0;
  return morph_spank_export_plan(sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (!spank_remote(sp)) return 0;
  return morph_spank_task_check(sp);
}

/* Frees the option values, as every context allocated them (pyxis_alloc_exit). */
int slurm_spank_exit(spank_t sp, int ac, char **av) {
  int i;
  (void)sp;
  (void)ac;
  (void)av;
  for (i = 0; i < MORPH_MAX_OPTIONS; ++i) {
    free(morph_spank.values[i]);
    morph_spank.values[i] = NULL;
  }
  morph_spank.any_option = 0;
  return 0;
}
