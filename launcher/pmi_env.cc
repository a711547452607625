#include "launcher/pmi_env.h"

namespace morph::launcher {

bool has_pmi(const launch::Environment& env) {
  for (const char* name : {"PMIX_RANK", "PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK"})
    if (env.count(name) != 0) return true;
  return false;
}

}  // namespace morph::launcher
