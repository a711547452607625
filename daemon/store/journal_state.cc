#include "daemon/store/journal_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "libmorph/util/error.h"

namespace morph::store {
namespace {

using enum JournalState;

constexpr std::array kPaths = {ReconfigurationPath::start, ReconfigurationPath::inplace, ReconfigurationPath::shrink,
                               ReconfigurationPath::requeue, ReconfigurationPath::preempt};
constexpr std::array kStates = {planned, signalled, requeued, held, updated, released, done, rolled_back};

// The morphd actions between steps are in docs/state.md (daemon/reconfigurer.cc takes them).
constexpr std::array kRecordSteps = {planned, updated, done};  // start, inplace, shrink
constexpr std::array kRequeueSteps = {planned, signalled, requeued, held, updated, released, done};
constexpr std::array kPreemptSteps = {planned, signalled, requeued, done};

std::string path_text(std::span<const JournalState> steps);

}  // namespace

const char* to_string(ReconfigurationPath path) {
  switch (path) {
    case ReconfigurationPath::start: return "start";
    case ReconfigurationPath::inplace: return "inplace";
    case ReconfigurationPath::shrink: return "shrink";
    case ReconfigurationPath::requeue: return "requeue";
    case ReconfigurationPath::preempt: return "preempt";
  }
  return "?";
}

const char* to_string(JournalState state) {
  switch (state) {
    case planned: return "planned";
    case signalled: return "signalled";
    case requeued: return "requeued";
    case held: return "held";
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
  throw Error(fmt::format("{}: \"{}\" is not a reconfiguration path (start, inplace, shrink, requeue, preempt)", what, text));
}

JournalState parse_journal_state(std::string_view text, std::string_view what) {
  for (const auto state : kStates)
    if (text == to_string(state)) return state;
  throw Error(fmt::format("{}: \"{}\" is not a journal state", what, text));
}

std::span<const JournalState> journal_steps(ReconfigurationPath path) {
  switch (path) {
    case ReconfigurationPath::start:
    case ReconfigurationPath::inplace:
    case ReconfigurationPath::shrink: return kRecordSteps;
    case ReconfigurationPath::requeue: return kRequeueSteps;
    case ReconfigurationPath::preempt: return kPreemptSteps;
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
}

}  // namespace morph::store
