/* Remote context (slurmstepd): the helper exports the job's current plan, read from its
 * record in slurmctld, to the tasks; a plan that morphd changed while the job was
 * requeued is the one a restarted job sees. Jobs without --morph-* options load nothing. */
#include "plugins/spank/spank_morph.h"

typedef int (*export_fn)(spank_t sp);

int morph_spank_export_plan(spank_t sp) {
  export_fn export_plan;
  if (!morph_spank.any_option) return 0;
  export_plan = (export_fn)morph_spank_helper_function("morph_helper_export_plan");
  return export_plan ? export_plan(sp) : -1;
}
