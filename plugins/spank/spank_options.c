/* Registers the --morph-* options (morph_option_table) and checks values as they come. */
#include "plugins/spank/spank_morph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slurm passes the option's `val`: its index in morph_option_table. Idempotent: the same
 * option given again replaces the value. */
static int on_option(int val, const char *optarg, int remote) {
  char error[256];
  if (val < 0 || val >= morph_option_count) return -1;
  if (!remote && morph_check_option(morph_option_table[val].name, optarg, error, sizeof error) != 0) {
    slurm_error("morph: %s", error);
    return -1;
  }
  free(morph_spank.values[val]);
  morph_spank.values[val] = strdup(optarg ? optarg : "");
  morph_spank.any_option = 1;
  return 0;
}

int morph_spank_register_options(spank_t sp) {
  static char names[16][32];
  static struct spank_option table[16];
  int i;
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
