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

#include "libmorph/request/limits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest value of any option; longer ones are refused without being echoed. */
#define MORPH_OPTION_MAX_VALUE 512

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

/* The one parser of the integers in --morph-* values, for the plugins and the morph
 * command alike: decimal digits with an optional leading '+' and nothing else (no
 * spaces, no sign '-', no hexadecimal), in [min, max]. 0, or -1 with "WHAT: ..." in
 * `error`. */
int morph_parse_integer(const char *what, const char *text, int64_t min, int64_t max, int64_t *out, char *error,
                        size_t error_size);

/* An inline model specification "layers=..,hidden=..,heads=..,seq=..[,vocab=..]
 * [,params=..][,name=..]": keys in any letter case, each at most once, unknown keys
 * refused by name; params is a decimal number (no hexadecimal, inf or nan). */
typedef struct morph_model_values {
  int64_t layers, hidden, heads, seq, vocab; /* vocab 0 when not given */
  double params;                             /* 0 when not given */
  char name[65];                             /* "" when not given */
} morph_model_values;

/* The one parser of inline model specifications; `what` (a flag or a key) leads the
 * message. 0, or -1 with the message in `error`. */
int morph_parse_model_spec(const char *what, const char *spec, morph_model_values *out, char *error,
                           size_t error_size);

/* A plan-feature list, with `what` leading the message. */
int morph_check_plan_features(const char *what, const char *list, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* MORPH_REQUEST_OPTION_CHECK_H */
