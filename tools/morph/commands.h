// The morph subcommands; each registers its options on the app and runs from the callback.
#pragma once

#include <CLI/CLI.hpp>

#include "tools/morph/context.h"

namespace morph::cli {

void add_plan_command(CLI::App& app, Context& context);
void add_fit_command(CLI::App& app, Context& context);
void add_validate_command(CLI::App& app, Context& context);
void add_curve_command(CLI::App& app, Context& context);
void add_simulate_command(CLI::App& app, Context& context);
void add_reshard_command(CLI::App& app, Context& context);
void add_hetero_command(CLI::App& app, Context& context);
// status, timeline and explain (built with SQLite: morphd's state database).
void add_state_commands(CLI::App& app, Context& context);
// models: the parameters morphd predicts with and what its jobs measured (SQLite too).
void add_models_command(CLI::App& app, Context& context);
// forget: drop a model's online refits and their points (morphd stopped; SQLite too).
void add_forget_command(CLI::App& app, Context& context);

}  // namespace morph::cli
