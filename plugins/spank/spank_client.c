/* Allocator context (sbatch, salloc): check the --morph-* request as a whole and hand it
 * to slurmctld in the job's SPANK environment. srun refuses the options: it fixes its
 * task count before slurmctld sizes the job, so on an allocation of its own it would
 * start one task per node, and inside an allocation it runs a step of a job that is
 * already sized. */
#include "plugins/spank/spank_morph.h"

#include "libmorph/record/task_variables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*check_fn)(const char *const *values, const char *catalog, const char *conf, char *error,
                        size_t error_size);

/* Where Slurm keeps option i for the job's steps: "_SLURM_SPANK_OPTION_morph_morph_model"
 * in the submitting process's environment and the job control environment, which its
 * tasks see with a SLURM_SPANK prefix. */
static void option_variable(int i, const char *prefix, char *name, size_t size) {
  char *c;
  snprintf(name, size, "%s_SLURM_SPANK_OPTION_morph_morph-%s", prefix, morph_option_table[i].name);
  for (c = name; *c != '\0'; ++c)
    if (*c == '-') *c = '_';
}

/* Where a job's tasks, and the commands they run, see its request for option i:
 * "SLURM_SPANK_MORPH_REQUEST_MODEL" (the job control environment, with Slurm's prefix). */
static void request_variable(int i, char *name, size_t size) {
  snprintf(name, size, "SLURM_SPANK_%s", morph_option_table[i].env);
}

/* sbatch and salloc inside a job: Slurm passes the job's own options on to them in the
 * environment (SLURM_SPANK__SLURM_SPANK_OPTION_morph_*) and reads them after the #SBATCH
 * lines, over those (_opt_env after _opt_batch_script in sbatch/opt.c). They are never the
 * new job's: a script that submits itself again gives them in its #SBATCH lines, and a
 * script read from standard input or found in PATH must not mix its options with the
 * surrounding job's. Nor is the surrounding job's plan, which sbatch would export to the
 * new job (--export=ALL): all of it goes from this process's environment before Slurm
 * reads it. */
void morph_spank_forget_surrounding_job(void) {
  static const char *const task_variables[] = {MORPH_TASK_VARIABLES};
  char name[128];
  size_t v;
  int i;
  if (getenv("SLURM_JOB_ID") == NULL) return;
  for (i = 0; i < morph_option_count; ++i) {
    option_variable(i, "SLURM_SPANK_", name, sizeof name);
    unsetenv(name);
    option_variable(i, "", name, sizeof name);
    unsetenv(name);
    request_variable(i, name, sizeof name);
    unsetenv(name);
  }
  for (v = 0; v < sizeof task_variables / sizeof task_variables[0]; ++v) unsetenv(task_variables[v]);
}

/* A job without --morph-* options takes nothing of a surrounding Morph job's request into
 * its job control environment: its slurmstepd would take it for a Morph job without a plan. */
static void forget_surrounding_request(spank_t sp) {
  char name[128];
  int i;
  for (i = 0; i < morph_option_count; ++i) {
    option_variable(i, "", name, sizeof name); /* as Slurm set it for the new job and its steps */
    spank_job_control_unsetenv(sp, name);
  }
}

int morph_spank_submit(spank_t sp) {
  char error[512];
  int i;
  if (!morph_spank.any_option) {
    if (spank_context() == S_CTX_ALLOCATOR) forget_surrounding_request(sp);
    /* srun making an allocation of its own copied every SLURM_SPANK_* variable of its
     * environment into the new job's (init_spank_env, before this plugin ran), and its
     * tasks get that environment: a request set there by hand would make a Morph job
     * that srun itself cannot size, or tasks that take theirs for one. */
    if (spank_context() == S_CTX_LOCAL && getenv("SLURM_JOB_ID") == NULL)
      for (i = 0; i < morph_option_count; ++i) {
        char name[64];
        spank_job_control_unsetenv(sp, morph_option_table[i].env);
        request_variable(i, name, sizeof name);
        unsetenv(name);
      }
    return 0;
  }
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
      request_variable(i, name, sizeof name);
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
