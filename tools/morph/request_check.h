// Flags of the morph command that carry --morph-* values (--batch, --seq, --model,
// --plans) are checked by the plugins' own checks (option_check.h), so that the command
// and the cluster accept and refuse the same values.
#pragma once

#include <string>

#include "libmorph/request/option_check.h"
#include "tools/command_line/command_line.h"

namespace morph::cli {

// A validator for a flag that carries the value of option `name` ("batch", "seq", ...);
// the message names the flag instead of --morph-NAME.
inline command_line::Option::Check request_check(const std::string& name) {
  const auto problem = [name](const std::string& value) -> std::string {
    char error[256];
    if (morph_check_option(name.c_str(), value.c_str(), error, sizeof error) == 0) return {};
    std::string message = error;
    const std::string prefix = "--morph-" + name + ": ";
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  };
  return {problem, "--morph-" + name};
}

}  // namespace morph::cli
