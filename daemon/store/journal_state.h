// The reconfiguration journal's state machine (docs/state.md): which Slurm actions a path
// takes, in which order, and which transitions are allowed. Pure; no database here.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace morph::store {

// start: a pending job gets its target's record; inplace: a new plan on the same GPUs,
// the step restarts (morphrun's driver); shrink: fewer nodes, the step restarts in
// place; requeue: a grow or a move; preempt: the job gives its GPUs back and waits.
enum class ReconfigurationPath { start, inplace, shrink, requeue, preempt };

enum class JournalState { planned, signalled, requeued, held, updated, released, done, rolled_back };

const char* to_string(ReconfigurationPath path);
const char* to_string(JournalState state);
// Throw morph::Error naming `what` and the bad value.
ReconfigurationPath parse_reconfiguration_path(std::string_view text, std::string_view what);
JournalState parse_journal_state(std::string_view text, std::string_view what);

// The forward states of a path, from planned to done.
std::span<const JournalState> journal_steps(ReconfigurationPath path);
bool is_final(JournalState state);

// Allowed: a later step of the path (a step whose effect Slurm already shows is skipped,
// e.g. a job found pending needs no checkpoint signal), or rolled_back from any
// unfinished state. Otherwise throws morph::Error "`what`: cannot ... from FROM to TO"
// (going back, leaving a final state, or a state the path does not have).
void check_journal_transition(ReconfigurationPath path, JournalState from, JournalState to, std::string_view what);

}  // namespace morph::store
