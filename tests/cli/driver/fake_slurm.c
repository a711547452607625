/* What morphrun --driver asks of libslurm, answered from files (LD_PRELOAD, for
 * morphrun_driver.bats): the job's AdminComment is the file $FAKE_ADMIN, its nodes
 * $FAKE_NODES; with $FAKE_UPDATE_FAIL set slurmctld refuses every update (a shrink). */
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path) {
  char *text = calloc(1, 65536);
  FILE *f = path != NULL ? fopen(path, "r") : NULL;
  size_t n = 0;
  if (text == NULL) return NULL;
  if (f != NULL) {
    n = fread(text, 1, 65535, f);
    fclose(f);
  }
  while (n > 0 && text[n - 1] == '\n') text[--n] = '\0';
  return text;
}

int slurm_load_job(job_info_msg_t **response, uint32_t job_id, uint16_t show_flags) {
  const char *nodes = getenv("FAKE_NODES");
  job_info_msg_t *m = calloc(1, sizeof *m);
  (void)show_flags;
  if (m == NULL || (m->job_array = calloc(1, sizeof *m->job_array)) == NULL) return SLURM_ERROR;
  m->record_count = 1;
  m->job_array[0].job_id = job_id;
  m->job_array[0].admin_comment = read_file(getenv("FAKE_ADMIN"));
  m->job_array[0].nodes = strdup(nodes != NULL ? nodes : "localhost");
  *response = m;
  return SLURM_SUCCESS;
}

void slurm_free_job_info_msg(job_info_msg_t *m) {
  if (m == NULL) return;
  free(m->job_array[0].admin_comment);
  free(m->job_array[0].nodes);
  free(m->job_array);
  free(m);
}

int slurm_update_job(job_desc_msg_t *desc) {
  const char *after = getenv("FAKE_NODES_AFTER");
  (void)desc;
  if (getenv("FAKE_UPDATE_FAIL") != NULL) {
    slurm_seterrno(ESLURM_DISABLED);
    return SLURM_ERROR;
  }
  if (after != NULL) setenv("FAKE_NODES", after, 1);
  return SLURM_SUCCESS;
}
