#include "daemon/store/journal_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "libmorph/util/error.h"

namespace morph::daemon {
namespace {

using enum JournalState;

constexpr std::array kPaths = {ReconfigurationPath::inplace, ReconfigurationPath::shrink, ReconfigurationPath::requeue};
constexpr std::array kStates = {planned, signalled, requeued, updated, released, done, rolled_back};

// The morphd actions between steps are in docs/state.md.
constexpr std::array kInplaceSteps = {planned, updated, done};
constexpr std::array kShrinkSteps = {planned, signalled, updated, done};
constexpr std::array kRequeueSteps = {planned, signalled, requeued, updated, released, done};

std::string path_text(std::span<const JournalState> steps);

}  // namespace

const char* to_string(ReconfigurationPath path) {
  switch (path) {
    case ReconfigurationPath::inplace: return "inplace";
    case ReconfigurationPath::shrink: return "shrink";
    case ReconfigurationPath::requeue: return "requeue";
  }
  return "?";
}

const char* to_string(JournalState state) {
  switch (state) {
    case planned: return "planned";
    case signalled: return "signalled";
    case requeued: return "requeued";
    case updated: return "updated";
    case released: return "released";
    case done: return "done";
    case rolled_back: return "rolled_back";
  }
  return "?";
}

ReconfigurationPath parse_reconfiguration_path(std::string_view text, std::string_view what) {
  for (const auto path : kPaths)
    if (text == to_string(path)) return path;
  throw Error(fmt::format("{}: \"{}\" is not a reconfiguration path (inplace, shrink, requeue)", what, text));
}

JournalState parse_journal_state(std::string_view text, std::string_view what) {
  for (const auto state : kStates)
    if (text == to_string(state)) return state;
  throw Error(fmt::format("{}: \"{}\" is not a journal state", what, text));
}

std::span<const JournalState> journal_steps(ReconfigurationPath path) {
  switch (path) {
    case ReconfigurationPath::inplace: return kInplaceSteps;
    case ReconfigurationPath::shrink: return kShrinkSteps;
    case ReconfigurationPath::requeue: return kRequeueSteps;
  }
  return {};
}

namespace {
std::string path_text(std::span<const JournalState> steps) {
  std::string text;
  for (const auto step : steps) text += (text.empty() ? "" : " -> ") + std::string(to_string(step));
  return text;
}
}  // namespace

bool is_final(JournalState state) { return state == done || state == rolled_back; }

void check_journal_transition(ReconfigurationPath path, JournalState from, JournalState to, std::string_view what) {
  if (is_final(from))
    throw Error(fmt::format("{}: cannot move from {} to {}: the reconfiguration is finished", what, to_string(from),
                            to_string(to)));
  if (to == rolled_back) return;
  const auto steps = journal_steps(path);
  const auto at = std::find(steps.begin(), steps.end(), from);
  const auto target = std::find(steps.begin(), steps.end(), to);
  if (at == steps.end() || target == steps.end())
    throw Error(fmt::format("{}: cannot move from {} to {}: the {} path goes {}", what, to_string(from), to_string(to),
                            to_string(path), path_text(steps)));
  if (target <= at)
    throw Error(fmt::format("{}: cannot go back from {} to {} (states only move forward)", what, to_string(from),
                            to_string(to)));
  if (target != at + 1)
    throw Error(fmt::format("{}: cannot move from {} to {}: the {} path goes {}", what, to_string(from), to_string(to),
                            to_string(path), path_text(steps)));
}

}  // namespace morph::daemon
