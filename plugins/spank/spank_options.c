/* Registers the --morph-* options (morph_option_table) and checks values as they come. */
#include "plugins/spank/spank_morph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slurm passes the option's `val`: its index in morph_option_table. Idempotent, and the
 * last value wins: sbatch passes an #SBATCH line first and the command line after it. */
static int on_option(int val, const char *optarg, int remote) {
  char error[256];
  const char *value = optarg ? optarg : "";
  if (val < 0 || val >= morph_option_count) return -1;
  if (!remote && morph_check_option(morph_option_table[val].name, value, error, sizeof error) != 0) {
    slurm_error("morph: %s", error);
    return -1;
  }
  free(morph_spank.values[val]);
  morph_spank.values[val] = strdup(value);
  if (morph_spank.values[val] == NULL) {
    slurm_error("morph: --morph-%s: out of memory", morph_option_table[val].name);
    return -1;
  }
  morph_spank.any_option = 1;
  return 0;
}

int morph_spank_register_options(spank_t sp) {
  static char names[MORPH_MAX_OPTIONS][32];
  static struct spank_option table[MORPH_MAX_OPTIONS];
  int i;
  if (morph_option_count > MORPH_MAX_OPTIONS) {
    slurm_error("morph: %d options do not fit MORPH_MAX_OPTIONS=%d", morph_option_count, MORPH_MAX_OPTIONS);
    return -1;
  }
  for (i = 0; i < morph_option_count; ++i) {
    struct spank_option *o = &table[i];
    snprintf(names[i], sizeof names[i], "morph-%s", morph_option_table[i].name);
    o->name = names[i];
    o->arginfo = (char *)morph_option_table[i].arg_info;
    o->usage = (char *)morph_option_table[i].usage;
    o->has_arg = 1;
    o->val = i;
    o->cb = on_option;
    const spank_err_t rc = spank_option_register(sp, o);
    if (rc != ESPANK_SUCCESS) {
      slurm_error("morph: --%s: cannot register the option: %s", names[i], spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}
