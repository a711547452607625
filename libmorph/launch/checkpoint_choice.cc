#include "libmorph/launch/checkpoint_choice.h"

#include <filesystem>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::launch {

namespace fs = std::filesystem;

namespace {

void check_model(const CheckpointChoice& choice, const std::string& model) {
  if (const auto recorded = choice.index.trainer.find("morph_model");
      !model.empty() && recorded != choice.index.trainer.end() && recorded->is_string() && *recorded != model)
    throw Error(fmt::format("checkpoint {} is of model {}, the job trains {}", choice.newest,
                            recorded->get<std::string>(), model));
}

// `choice` (its folder and index read) checked for the job and given what it resumes from:
// itself, or its copy resharded to `layout` when that differs.
CheckpointChoice resume_plan(CheckpointChoice choice, const state::Layout& layout, const std::string& model) {
  check_model(choice, model);
  choice.needs_reshard = choice.index.layout != layout;
  if (choice.needs_reshard) {
    try {
      state::check_layout(choice.index.spec, layout);
    } catch (const Error& e) {
      throw Error(fmt::format("checkpoint {} cannot be resharded to {}: {}", choice.newest, state::to_string(layout),
                              e.what()));
    }
  }
  choice.resume = choice.needs_reshard ? resharded_name(choice.newest, layout) : choice.newest;
  return choice;
}

}  // namespace

std::string resharded_name(const std::string& checkpoint, const state::Layout& l) {
  return fmt::format("{}.dp{}-tp{}-pp{}-z{}", checkpoint, l.dp, l.tp, l.pp, l.zero);
}

std::optional<CheckpointChoice> choose_checkpoint(const std::string& dir, const state::Layout& layout,
                                                  const std::string& model) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::optional<CheckpointChoice> best;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    // A stage is not a checkpoint until its commit renames it, nor is its writer's lock
    // ("<dir>.partial.lock", a regular file); a folder that cannot be read is none either
    // (its owner's, say, in a shared directory).
    std::error_code unreadable;
    if (!entry.is_directory(unreadable) || entry.path().extension() == ".partial" ||
        !fs::exists(entry.path() / "index.json", unreadable))
      continue;
    state::CheckpointIndex index;
    try {
      index = state::read_index(entry.path().string());
    } catch (const Error&) {
      continue;  // not a Morph checkpoint, or a damaged one: never the newest
    }
    const bool better = !best || index.progress.step > best->index.progress.step ||
                        (index.progress.step == best->index.progress.step && index.layout == layout &&
                         best->index.layout != layout);
    if (better) best = CheckpointChoice{entry.path().string(), std::move(index), false, {}};
  }
  if (ec) throw Error(fmt::format("--checkpoint {}: cannot list it: {}", dir, ec.message()));
  if (!best) return std::nullopt;
  return resume_plan(std::move(*best), layout, model);
}

std::optional<CheckpointChoice> choice_of(const std::string& checkpoint, const state::Layout& layout,
                                          const std::string& model) {
  if (checkpoint.empty()) return std::nullopt;
  return resume_plan(CheckpointChoice{checkpoint, state::read_index(checkpoint), false, {}}, layout, model);
}

std::optional<CheckpointChoice> chosen_checkpoint(const std::string& checkpoint, const state::Layout& layout,
                                                  const std::string& model) {
  if (checkpoint.empty()) return std::nullopt;
  CheckpointChoice choice{checkpoint, {}, false, checkpoint};
  try {
    choice.index = state::read_index(checkpoint);
  } catch (const Error& e) {
    throw Error(fmt::format("{}={}: not a committed checkpoint here: {}", kCheckpointChoiceVariable, checkpoint,
                            e.what()));
  }
  check_model(choice, model);
  if (choice.index.layout != layout)
    throw Error(fmt::format("{}={}: the checkpoint is in layout {}, the plan needs {}", kCheckpointChoiceVariable,
                            checkpoint, state::to_string(choice.index.layout), state::to_string(layout)));
  return choice;
}

}  // namespace morph::launch
