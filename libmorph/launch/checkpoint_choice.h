// Which checkpoint a restarted job resumes from, and whether it must be resharded first:
// the committed checkpoint (a folder with index.json; "<dir>.partial" stages and their
// ".partial.lock" files are never read) with the most progress in the job's checkpoint
// folder, preferring, at equal progress, one already in the plan's layout. A reshard goes
// to a sibling folder named for the new layout, so the old checkpoint stays usable until
// the new one is committed.
#pragma once

#include <optional>
#include <string>

#include "libmorph/state/checkpoint.h"
#include "libmorph/state/layout.h"

namespace morph::launch {

struct CheckpointChoice {
  std::string newest;      // the checkpoint to start from
  state::CheckpointIndex index;
  bool needs_reshard = false;
  std::string resume;      // what the trainer loads: `newest`, or the resharded copy
};

// "<dir>/step_12" + dp=4,tp=2,pp=1,zero=1 -> "<dir>/step_12.dp4-tp2-pp1-z1"
std::string resharded_name(const std::string& checkpoint, const state::Layout& layout);

// nullopt when `dir` holds no committed checkpoint (a fresh start). Throws morph::Error
// when the newest checkpoint belongs to another model (`model`, compared with the
// "morph_model" its trainer recorded, when both are known) or cannot take the layout.
std::optional<CheckpointChoice> choose_checkpoint(const std::string& dir, const state::Layout& layout,
                                                  const std::string& model);

// The choice of `checkpoint` ("": none) as choose_checkpoint() makes it for the folder it
// finds newest: resharded when its layout is not `layout`. Under a plain srun step every
// task takes task 0's folder so (launcher/step_choice.h). Throws morph::Error: no
// committed checkpoint there, another model's, or a layout it cannot take.
std::optional<CheckpointChoice> choice_of(const std::string& checkpoint, const state::Layout& layout,
                                          const std::string& model);

// morphrun --driver chooses (and reshards) once for the whole step and tells its tasks
// in this variable: the checkpoint folder, already in the plan's layout, or "" for a
// fresh start. Each task choosing on its own could disagree with another on NFS, where a
// node's cached listing of the folder can lag (acdirmin/acdirmax).
inline constexpr const char* kCheckpointChoiceVariable = "MORPH_CHECKPOINT_CHOICE";

// The choice `checkpoint` ("": none) made for the step, checked as choose_checkpoint()
// checks its own: a committed checkpoint of `model` (when both are known), here already
// in `layout`. Throws morph::Error naming the variable and the folder otherwise.
std::optional<CheckpointChoice> chosen_checkpoint(const std::string& checkpoint, const state::Layout& layout,
                                                  const std::string& model);

}  // namespace morph::launch
