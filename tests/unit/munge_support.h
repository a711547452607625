// Tests that need munged skip, saying so, where it is not running.
#pragma once

#include <gtest/gtest.h>

#include "daemon/report/munge_credential.h"

namespace morph::test {

// "" when munged answers, else why not.
inline std::string munged_unreachable() {
  try {
    report::munge_decode_credential(report::munge_encode_payload("probe"));
    return {};
  } catch (const report::MungeError& e) {
    return e.what();
  }
}

}  // namespace morph::test

#define MORPH_REQUIRE_MUNGED()                                                                        \
  do {                                                                                                \
    if (const std::string why = ::morph::test::munged_unreachable(); !why.empty())                    \
      GTEST_SKIP() << "munged is not reachable (" << why << "); start it with: runuser -u munge -- " \
                   << "/usr/sbin/munged";                                                             \
  } while (false)
