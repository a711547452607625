/* spank_morph: the plan-agnostic --morph-* options of sbatch, salloc and srun.
 *
 * C, and without the C++ runtime, because Slurm loads it into every client and
 * slurmstepd of the cluster; the layout of NVIDIA's pyxis: one file per Slurm context
 * behind spank_morph.c. The C++ work (reading the job's record, the catalog and
 * morph.conf) lives in spank_morph_helper.so, loaded only for Morph jobs. */
#ifndef MORPH_SPANK_MORPH_H
#define MORPH_SPANK_MORPH_H

#include <slurm/spank.h>

#include "libmorph/request/option_check.h"

#define MORPH_PATH_MAX 4096
#define MORPH_MAX_OPTIONS 16 /* room for morph_option_table (checked in spank_options.c) */
#define MORPH_PLAN_TRIES_MAX 20

struct morph_spank_args {
  char helper[MORPH_PATH_MAX];  /* helper=PATH (default: beside this plugin) */
  char catalog[MORPH_PATH_MAX]; /* catalog=PATH: also check model names in the client */
  char conf[MORPH_PATH_MAX];    /* conf=PATH: also check GPU types in the client */
  int plan_tries;               /* plan_tries=N: reads of a job's plan from slurmctld (0: default 4) */
};

struct morph_spank_state {
  struct morph_spank_args args;
  char *values[MORPH_MAX_OPTIONS]; /* by index of morph_option_table; NULL when not given */
  int any_option;
  int components; /* sbatch and salloc: init_post_opt calls, one per component of a job */
  /* slurmstepd: plugstack.conf's arguments were refused (logged); Morph jobs do not start. */
  int bad_args;
  /* slurmstepd: why this step's tasks do not start, and their exit code (75: requeue). */
  char plan_error[1024];
  int plan_exit;
};

extern struct morph_spank_state morph_spank;

/* spank_args.c: plugstack.conf arguments (helper=, catalog=, conf=, plan_tries=); strict.
 * 0 or -1 with a logged error. */
int morph_spank_parse_args(int argc, char **argv, struct morph_spank_args *args);

/* spank_options.c: register the options in every context. */
int morph_spank_register_options(spank_t sp);

/* spank_client.c: sbatch, salloc, srun: check and hand the request to slurmctld.
 * morph_spank_forget_surrounding_job(): sbatch and salloc inside a job drop that job's
 * options and plan from their environment before Slurm reads it. */
int morph_spank_submit(spank_t sp);
void morph_spank_forget_surrounding_job(void);

/* spank_srun.c: srun inside a Morph allocation: one task per GPU and the plan, as
 * defaults of srun's own environment (before srun reads it). */
int morph_spank_srun_defaults(void);

/* spank_remote.c: slurmstepd: give the step's tasks the job's plan (user_init); a task
 * whose plan could not be given says why and exits instead of running (task_init).
 * Neither ever fails the launch: a failing remote hook drains the node. */
int morph_spank_export_plan(spank_t sp);
int morph_spank_task_check(spank_t sp);

/* spank_helper.c: a function of the C++ helper, loaded on first use; NULL (and a logged
 * error) when it cannot be loaded. Callers cast it to the function's real type. */
typedef void (*morph_helper_fn)(void);
morph_helper_fn morph_spank_helper_function(const char *name);

#endif /* MORPH_SPANK_MORPH_H */
