/* Remote context (slurmstepd): the helper gives the step's tasks the job's current plan
 * (see helper/step_plan.h); a plan that morphd changed while the job was requeued is the
 * one a restarted job sees. A Morph job is known by its options or, when
 * --export=NONE stripped those from the batch script, by the request Slurm keeps in
 * its environment (SLURM_SPANK_MORPH_REQUEST_*). Other jobs load nothing.
 *
 * Nothing here fails the launch: a failing user_init makes slurmd drain the node and
 * report the batch job COMPLETED 0:0 without having run it. A step whose plan cannot be
 * given starts its tasks, and each says why on its standard error and exits with 75
 * (slurmctld did not answer: RequeueExit=75 requeues the job) or 78 (no valid plan for
 * this allocation) before running anything. */
#include "plugins/spank/spank_morph.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*export_fn)(spank_t sp, int tries, char *error, size_t error_size);

static int is_morph_job(spank_t sp) {
  char value[8];
  spank_err_t rc;
  if (morph_spank.any_option) return 1;
  rc = spank_getenv(sp, "SLURM_SPANK_MORPH_REQUEST_MODEL", value, sizeof value);
  return rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE; /* NOSPACE: present, only longer */
}

int morph_spank_export_plan(spank_t sp) {
  export_fn export_plan;
  if (!is_morph_job(sp)) return 0;
  morph_spank.plan_error[0] = '\0';
  if (morph_spank.bad_args) {
    snprintf(morph_spank.plan_error, sizeof morph_spank.plan_error,
             "morph: plugstack.conf gives spank_morph arguments this node refuses (see slurmd's log)");
    morph_spank.plan_exit = 78;
    spank_setenv(sp, "MORPH_PLAN_ERROR", morph_spank.plan_error, 1);
    return 0;
  }
  export_plan = (export_fn)morph_spank_helper_function("morph_helper_export_plan");
  if (export_plan == NULL) {
    snprintf(morph_spank.plan_error, sizeof morph_spank.plan_error,
             "morph: spank_morph_helper.so cannot be loaded on this node (see slurmd's log)");
    morph_spank.plan_exit = 78;
    spank_setenv(sp, "MORPH_PLAN_ERROR", morph_spank.plan_error, 1);
    return 0;
  }
  morph_spank.plan_exit = export_plan(sp, morph_spank.args.plan_tries, morph_spank.plan_error,
                                      sizeof morph_spank.plan_error);
  if (morph_spank.plan_exit != 0 && morph_spank.plan_error[0] == '\0')
    snprintf(morph_spank.plan_error, sizeof morph_spank.plan_error,
             "morph: the job's plan could not be given to its tasks (see slurmd's log)");
  if (morph_spank.plan_exit != 0) spank_setenv(sp, "MORPH_PLAN_ERROR", morph_spank.plan_error, 1);
  return 0;
}

int morph_spank_task_check(spank_t sp) {
  (void)sp;
  if (morph_spank.plan_exit == 0) return 0;
  /* The task's process, forked from a threaded slurmstepd: write(2), not stdio. */
  morph_spank.plan_error[sizeof morph_spank.plan_error - 2] = '\0';
  strcat(morph_spank.plan_error, "\n");
  {
    const ssize_t written = write(STDERR_FILENO, morph_spank.plan_error, strlen(morph_spank.plan_error));
    (void)written; /* nothing more to say if stderr is gone */
  }
  _exit(morph_spank.plan_exit);
}
