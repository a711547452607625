// Errors a user can act on: every message names the flag, file or key and the bad value.
#pragma once

#include <stdexcept>
#include <string>

namespace morph {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace morph
