#include "plugins/spank/spank_client.h"

#include <fmt/format.h>

#include "libmorph/config/morph_conf.h"
#include "libmorph/model/catalog.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"
#include "plugins/common/slurm_host.h"
#include "plugins/spank/spank_state.h"

namespace morph::spank {
namespace {

// What can be checked before the job leaves the client: the options together, the model
// against the catalog, the GPU types against morph.conf.
void check_request(const State& s) {
  validate_request(s.request);
  if (!s.args.catalog.empty() && s.request.model.find('=') == std::string::npos)
    Catalog::load_file(s.args.catalog).resolve(s.request.model, "--morph-model");
  if (!s.args.conf.empty() && !s.request.gpu_types.empty()) {
    const MorphConfig config = load_morph_conf(s.args.conf);
    for (const std::string& type : s.request.gpu_types)
      if (config.cluster.find_gpu_type(type) == nullptr)
        throw Error(fmt::format("--morph-gpu-type: this cluster has no GPU type {}", quote(type)));
  }
}

}  // namespace

int submit_request(spank_t sp) {
  const State& s = state();
  if (!s.any_option) return 0;
  try {
    check_request(s);
  } catch (const Error& e) {
    slurm_error("morph: %s", e.what());
    return -1;
  }
  for (const auto& [name, value] : to_job_env(s.request)) {
    const spank_err_t rc = spank_job_control_setenv(sp, name.c_str(), value.c_str(), 1);
    if (rc != ESPANK_SUCCESS) {
      slurm_error("morph: cannot pass %s to the controller: %s", name.c_str(), spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}

}  // namespace morph::spank
