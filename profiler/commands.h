// The morph-profile subcommands: one table that the dispatcher, the usage line and the
// unknown-subcommand message all read.
#pragma once

#include <string>

#include "tools/command_line/command_line.h"

namespace morph::profile {

struct Context {
  std::string config_path;  // --config ("": morph_conf_path's default)
};

void add_topo_command(command_line::Command& app, Context& context);
void add_bandwidth_command(command_line::Command& app, Context& context);
void add_job_command(command_line::Command& app, Context& context);

struct Subcommand {
  const char* name;
  void (*add)(command_line::Command& app, Context& context);
};

inline constexpr Subcommand kSubcommands[] = {
    {"topo", add_topo_command},
    {"bandwidth", add_bandwidth_command},
    {"job", add_job_command},
};

// "topo, bandwidth or job"
std::string subcommand_names();

}  // namespace morph::profile
