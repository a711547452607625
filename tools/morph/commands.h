// The morph subcommands; each registers its options on the app and runs from the callback.
#pragma once

#include "tools/command_line/command_line.h"
#include "tools/morph/context.h"

namespace morph::cli {

void add_plan_command(command_line::Command& app, Context& context);
void add_fit_command(command_line::Command& app, Context& context);
void add_validate_command(command_line::Command& app, Context& context);
void add_curve_command(command_line::Command& app, Context& context);
void add_simulate_command(command_line::Command& app, Context& context);
void add_reshard_command(command_line::Command& app, Context& context);
void add_hetero_command(command_line::Command& app, Context& context);
// status, timeline and explain (built with SQLite: morphd's state database).
void add_state_commands(command_line::Command& app, Context& context);
// models: the parameters morphd predicts with and what its jobs measured (SQLite too).
void add_models_command(command_line::Command& app, Context& context);
// forget: drop a model's online refits and their points (morphd stopped; SQLite too).
void add_forget_command(command_line::Command& app, Context& context);

}  // namespace morph::cli
