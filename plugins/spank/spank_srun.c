/* Local context (srun) inside a Morph allocation, typically salloc's shell: Slurm gives
 * salloc's shell the job's request (SLURM_SPANK_MORPH_REQUEST_*) but neither its plan nor
 * its task count, so srun would start one task per node. Before srun reads its input
 * variables, the helper reads the job's record once and sets, where the user has not,
 * SLURM_NTASKS, SLURM_NTASKS_PER_NODE and SLURM_CPUS_PER_TASK (one task per GPU), and the
 * plan with MORPH_RECORD, which the step's tasks then inherit without asking slurmctld. */
#include "plugins/spank/spank_morph.h"

#include <stdlib.h>
#include <string.h>

typedef int (*defaults_fn)(uint32_t job_id, int tries, char *error, size_t error_size);

int morph_spank_srun_defaults(void) {
  char error[1024];
  char *end = NULL;
  const char *job = getenv("SLURM_JOB_ID");
  const char *inherited = getenv("MORPH_RECORD_JOB");
  unsigned long job_id;
  defaults_fn defaults;
  if (job == NULL || getenv("SLURM_SPANK_MORPH_REQUEST_MODEL") == NULL) return 0;
  if (inherited != NULL && strcmp(inherited, job) == 0) return 0; /* a batch script: it has the plan */
  job_id = strtoul(job, &end, 10);
  if (end == job || *end != '\0' || job_id == 0 || job_id > UINT32_MAX) return 0;
  defaults = (defaults_fn)morph_spank_helper_function("morph_helper_srun_defaults");
  if (defaults == NULL) return -1;
  error[0] = '\0'; /* never print an unwritten buffer: a helper may fail without a message */
  if (defaults((uint32_t)job_id, morph_spank.args.plan_tries, error, sizeof error) != 0) {
    slurm_error("%s", error[0] != '\0' ? error : "morph: the job's plan could not be read for srun");
    return -1;
  }
  return 0;
}
