/* plugstack.conf arguments of spank_morph: helper=PATH catalog=PATH conf=PATH plan_tries=N. */
#include "plugins/spank/spank_morph.h"

#include <stdio.h>
#include <string.h>

static int plan_tries(const char *text, int *out) {
  char error[128];
  int64_t value = 0;
  if (morph_parse_integer("morph: plugstack.conf: plan_tries", text, 1, MORPH_PLAN_TRIES_MAX, &value, error,
                          sizeof error) != 0) {
    slurm_error("%s", error);
    return -1;
  }
  *out = (int)value;
  return 0;
}

int morph_spank_parse_args(int argc, char **argv, struct morph_spank_args *args) {
  int i;
  memset(args, 0, sizeof *args);
  for (i = 0; i < argc; ++i) {
    const char *arg = argv[i] ? argv[i] : "";
    const char *eq = strchr(arg, '=');
    char *target = NULL;
    const size_t key = eq ? (size_t)(eq - arg) : strlen(arg);
    if (key == 10 && strncmp(arg, "plan_tries", 10) == 0) {
      if (args->plan_tries != 0) {
        slurm_error("morph: plugstack.conf: plan_tries= given twice");
        return -1;
      }
      if (plan_tries(eq ? eq + 1 : "", &args->plan_tries) != 0) return -1;
      continue;
    }
    if (key == 6 && strncmp(arg, "helper", 6) == 0) target = args->helper;
    else if (key == 7 && strncmp(arg, "catalog", 7) == 0) target = args->catalog;
    else if (key == 4 && strncmp(arg, "conf", 4) == 0) target = args->conf;
    if (target == NULL) {
      slurm_error("morph: plugstack.conf: unknown argument '%.64s' (expected helper=PATH, catalog=PATH, conf=PATH, "
                  "plan_tries=N)",
                  arg);
      return -1;
    }
    if (target[0] != '\0') {
      slurm_error("morph: plugstack.conf: %.*s= given twice", (int)key, arg);
      return -1;
    }
    if (eq == NULL || eq[1] == '\0' || strlen(eq + 1) >= MORPH_PATH_MAX) {
      slurm_error("morph: plugstack.conf: %.*s= needs a path", (int)key, arg);
      return -1;
    }
    /* Relative, a path would depend on the working directory of each client, and helper=
     * would have dlopen(3) search LD_LIBRARY_PATH inside a root slurmstepd. */
    if (eq[1] != '/') {
      slurm_error("morph: plugstack.conf: %.*s=%.256s is not an absolute path", (int)key, arg, eq + 1);
      return -1;
    }
    strcpy(target, eq + 1);
  }
  return 0;
}
