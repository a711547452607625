/* The --morph-* options: their table and the checks of their values, in C.
 *
 * spank_morph.so is loaded into every sbatch, salloc, srun and slurmstepd of a cluster,
 * most of them for jobs that are not Morph's, so it is written in C and must not pull the
 * C++ runtime in. These checks are the one definition of what a valid value is: the SPANK
 * plugin calls them in the client, and libmorph's MorphRequest (C++) calls them before it
 * converts a value. What needs the catalog or morph.conf (an unknown model name, a GPU
 * type the cluster lacks) is checked by job_submit_morph in slurmctld. */
#ifndef MORPH_REQUEST_OPTION_CHECK_H
#define MORPH_REQUEST_OPTION_CHECK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest value of any option; longer ones are refused without being echoed. */
#define MORPH_OPTION_MAX_VALUE 512

/* Limits of the values (also applied to catalog entries). */
#define MORPH_MAX_BATCH (INT64_C(1) << 30)
#define MORPH_MAX_SEQ (INT64_C(1) << 24)
#define MORPH_MAX_GPUS 65536
#define MORPH_MAX_LAYERS 100000
#define MORPH_MAX_HIDDEN (INT64_C(1) << 20)
#define MORPH_MAX_VOCAB 100000000
#define MORPH_MAX_PARAMS 1e15

typedef struct morph_option_info {
  const char *name;     /* without "--morph-" */
  const char *arg_info; /* e.g. "N" */
  const char *usage;
  const char *env;      /* name in the job's SPANK environment */
} morph_option_info;

extern const morph_option_info morph_option_table[];
extern const int morph_option_count;

/* Index of option `name` in morph_option_table, or -1. */
int morph_option_index(const char *name);

/* 0 when `value` is acceptable for option `name`; otherwise -1 with a one-line message
 * "--morph-NAME: ..." in `error` (always NUL-terminated). */
int morph_check_option(const char *name, const char *value, char *error, size_t error_size);

/* The options of one job together: `values[i]` is the value of morph_option_table[i] or
 * NULL. Each given value is checked, and a model and a batch must be given. */
int morph_check_request(const char *const values[], char *error, size_t error_size);

/* The same for an inline model spec and a plan-feature list, with `what` (a flag or a
 * key) leading the message. */
int morph_check_model_spec(const char *what, const char *spec, char *error, size_t error_size);
int morph_check_plan_features(const char *what, const char *list, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* MORPH_REQUEST_OPTION_CHECK_H */
