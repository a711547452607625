/* Allocator context (sbatch, salloc): check the --morph-* request as a whole and hand it
 * to slurmctld in the job's SPANK environment. srun refuses the options: it fixes its
 * task count before slurmctld sizes the job, so on an allocation of its own it would
 * start one task per node, and inside an allocation it runs a step of a job that is
 * already sized. */
#include "plugins/spank/spank_morph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*check_fn)(const char *const *values, const char *catalog, const char *conf, char *error,
                        size_t error_size);

int morph_spank_submit(spank_t sp) {
  char error[512];
  int i;
  if (!morph_spank.any_option) return 0;
  if (spank_context() == S_CTX_LOCAL) {
    const char *job = getenv("SLURM_JOB_ID");
    if (job == NULL) {
      slurm_error("morph: srun cannot size a job itself (it fixes its task count before slurmctld picks the GPUs): "
                  "use sbatch --morph-... or salloc --morph-..., then srun inside");
      return -1;
    }
    /* Inside a Morph job srun sees the job's own options again; only others are refused. */
    for (i = 0; i < morph_option_count; ++i) {
      char name[64];
      const char *job_value;
      if (morph_spank.values[i] == NULL) continue;
      snprintf(name, sizeof name, "SLURM_SPANK_%s", morph_option_table[i].env);
      job_value = getenv(name);
      if (job_value == NULL || strcmp(job_value, morph_spank.values[i]) != 0) {
        slurm_error("morph: --morph-%s: srun runs a step of job %.20s, which is already sized; its steps get its "
                    "plan and one task per GPU by themselves",
                    morph_option_table[i].name, job);
        return -1;
      }
    }
    return 0;
  }
  if (morph_check_request((const char *const *)morph_spank.values, error, sizeof error) != 0) {
    slurm_error("morph: %s", error);
    return -1;
  }
  /* Optional: what needs the catalog or morph.conf, checked here instead of in slurmctld. */
  if (morph_spank.args.catalog[0] != '\0' || morph_spank.args.conf[0] != '\0') {
    check_fn check = (check_fn)morph_spank_helper_function("morph_helper_check_request");
    if (check == NULL) return -1;
    if (check((const char *const *)morph_spank.values, morph_spank.args.catalog, morph_spank.args.conf, error,
              sizeof error) != 0) {
      slurm_error("morph: %s", error);
      return -1;
    }
  }
  for (i = 0; i < morph_option_count; ++i) {
    if (morph_spank.values[i] == NULL) continue;
    const spank_err_t rc = spank_job_control_setenv(sp, morph_option_table[i].env, morph_spank.values[i], 1);
    if (rc != ESPANK_SUCCESS) {
      slurm_error("morph: cannot pass %s to slurmctld: %s", morph_option_table[i].env, spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}
