/* Allocator context (sbatch, salloc): check the --morph-* request as a whole and hand it
 * to slurmctld in the job's SPANK environment. srun refuses the options: it fixes its
 * task count before slurmctld sizes the job, so on an allocation of its own it would
 * start one task per node, and inside an allocation it runs a step of a job that is
 * already sized. */
#include "plugins/spank/spank_morph.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* Whether `path` is a batch script whose #SBATCH (or #SLURM) lines give a --morph-*
 * option, read as sbatch reads them: at line starts, up to the first line that is neither
 * a comment nor blank (_opt_batch_script in sbatch/opt.c). */
static int script_gives_morph_option(const char *path) {
  char line[8192];
  struct stat st;
  FILE *f;
  int found = 0, at_start = 1;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (f = fopen(path, "r")) == NULL) return 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    const char *c = line;
    const int starts = at_start;
    at_start = strchr(line, '\n') != NULL;
    if (!starts) continue; /* the rest of a line longer than the buffer */
    if (strncmp(line, "#SBATCH", 7) == 0 || strncmp(line, "#SLURM", 6) == 0) {
      found = strstr(line, "--morph-") != NULL;
      continue;
    }
    while (isspace((unsigned char)*c)) ++c;
    if (*c != '\0' && *c != '#') break; /* a command: sbatch reads no further */
  }
  fclose(f);
  return found;
}

/* Whether this sbatch or salloc gives a --morph-* option itself: an argument, or an
 * #SBATCH line of its script (a script that submits itself again gives the values it
 * inherits). A script read from standard input is not seen. */
static int morph_option_given_here(void) {
  char buffer[65536];
  size_t n, at;
  FILE *f = fopen("/proc/self/cmdline", "r");
  if (f == NULL) return 1; /* unknown: the options count as the user's */
  n = fread(buffer, 1, sizeof buffer - 1, f);
  fclose(f);
  buffer[n] = '\0';
  for (at = strlen(buffer) + 1; at < n; at += strlen(buffer + at) + 1)
    if (strncmp(buffer + at, "--morph-", 8) == 0 || script_gives_morph_option(buffer + at)) return 1;
  return 0;
}

/* The surrounding job's options and request as this process's environment holds them,
 * not the job control environment: what Slurm reads for the options and exports. */
static void unset_inherited_variables(void) {
  char name[128];
  int i;
  for (i = 0; i < morph_option_count; ++i) {
    option_variable(i, "SLURM_SPANK_", name, sizeof name);
    unsetenv(name);
    option_variable(i, "", name, sizeof name);
    unsetenv(name);
    snprintf(name, sizeof name, "SLURM_SPANK_%s", morph_option_table[i].env);
    unsetenv(name);
  }
}

void morph_spank_note_inherited(void) {
  char name[128];
  const char *value;
  int i;
  if (getenv("SLURM_JOB_ID") == NULL) return;
  /* A submission that gives options of its own takes none of the surrounding job's: Slurm
   * would read them after its #SBATCH lines, over those, and add the ones it left out
   * (another model's --morph-plan, say). */
  if (morph_option_given_here()) {
    unset_inherited_variables();
    return;
  }
  for (i = 0; i < morph_option_count; ++i) {
    option_variable(i, "SLURM_SPANK_", name, sizeof name);
    if ((value = getenv(name)) != NULL) morph_spank.inherited[i] = strdup(value);
  }
}

/* The options are all the surrounding job's, none given here: Slurm passed them on. */
static int only_inherited(void) {
  int i, any = 0;
  for (i = 0; i < morph_option_count; ++i) {
    if (morph_spank.values[i] == NULL) continue;
    if (morph_spank.inherited[i] == NULL || strcmp(morph_spank.values[i], morph_spank.inherited[i]) != 0) return 0;
    any = 1;
  }
  return any;
}

/* A job without --morph-* options takes nothing of a surrounding Morph job's request into
 * its environment: its slurmstepd would take it for a Morph job without a plan. */
static void forget_surrounding_request(spank_t sp) {
  char name[128];
  int i;
  unset_inherited_variables();
  for (i = 0; i < morph_option_count; ++i) {
    option_variable(i, "", name, sizeof name); /* as Slurm set it for the new job and its steps */
    spank_job_control_unsetenv(sp, name);
  }
}

int morph_spank_submit(spank_t sp) {
  char error[512];
  int i;
  /* sbatch or salloc in a Morph job's script, without --morph-* options: a plain job. */
  if (spank_context() == S_CTX_ALLOCATOR && only_inherited()) {
    for (i = 0; i < morph_option_count; ++i) {
      free(morph_spank.values[i]);
      morph_spank.values[i] = NULL;
    }
    morph_spank.any_option = 0;
  }
  if (!morph_spank.any_option) {
    if (spank_context() == S_CTX_ALLOCATOR) forget_surrounding_request(sp);
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
