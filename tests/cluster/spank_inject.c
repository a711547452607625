/* A test-only SPANK plugin: --inject-env=NAME=VALUE puts any entry into the job's SPANK
 * environment, bypassing spank_morph's checks in the client, so that the tests can send
 * job_submit_morph what a hostile client could. Never installed. */
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

SPANK_PLUGIN(inject, 1)

#define MAX_ENTRIES 64
static char *entries[MAX_ENTRIES];
static int count;

static int on_inject(int val, const char *optarg, int remote) {
  (void)val;
  if (remote || optarg == NULL || count == MAX_ENTRIES) return 0;
  entries[count++] = strdup(optarg);
  return 0;
}

static struct spank_option inject_option = {
    "inject-env", "NAME=VALUE", "put NAME=VALUE into the job's SPANK environment (tests)", 1, 0, on_inject};

int slurm_spank_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_ALLOCATOR) return 0;
  return spank_option_register(sp, &inject_option) == ESPANK_SUCCESS ? 0 : -1;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  for (int i = 0; i < count; ++i) {
    char *eq = strchr(entries[i], '=');
    if (eq == NULL) continue;
    *eq = '\0';
    if (spank_job_control_setenv(sp, entries[i], eq + 1, 1) != ESPANK_SUCCESS) return -1;
  }
  return 0;
}
