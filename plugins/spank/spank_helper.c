/* Loads spank_morph_helper.so (C++: libmorph) on first use, from helper= or from the
 * folder spank_morph.so itself was loaded from. */
#define _GNU_SOURCE 1 /* dladdr */
#include <dlfcn.h>

#include "plugins/spank/spank_morph.h"

#include <stdio.h>
#include <string.h>

static void *helper;

static int helper_path(char *path, size_t size) {
  Dl_info self;
  const char *slash;
  if (morph_spank.args.helper[0] != '\0') return snprintf(path, size, "%s", morph_spank.args.helper) < (int)size ? 0 : -1;
  if (dladdr(&morph_spank, &self) == 0 || self.dli_fname == NULL) return -1;
  slash = strrchr(self.dli_fname, '/');
  if (slash == NULL || self.dli_fname[0] != '/') return -1; /* never a search of the library path */
  return snprintf(path, size, "%.*s/spank_morph_helper.so", (int)(slash - self.dli_fname), self.dli_fname) < (int)size
             ? 0
             : -1;
}

morph_helper_fn morph_spank_helper_function(const char *name) {
  morph_helper_fn function;
  void *symbol;
  if (helper == NULL) {
    char path[MORPH_PATH_MAX];
    if (helper_path(path, sizeof path) != 0) {
      slurm_error("morph: cannot locate spank_morph_helper.so (set helper=PATH in plugstack.conf)");
      return NULL;
    }
    helper = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (helper == NULL) {
      slurm_error("morph: cannot load %s: %s", path, dlerror());
      return NULL;
    }
  }
  symbol = dlsym(helper, name);
  if (symbol == NULL) {
    slurm_error("morph: spank_morph_helper.so has no %s", name);
    return NULL;
  }
  memcpy(&function, &symbol, sizeof function); /* POSIX: dlsym returns functions too */
  return function;
}
