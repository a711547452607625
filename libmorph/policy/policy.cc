#include "libmorph/policy/policy.h"

#include <fmt/format.h>

#include "libmorph/policy/policies.h"
#include "libmorph/util/error.h"
#include "libmorph/util/parse.h"

namespace morph::policy {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Policy> (*make)();
};

constexpr Entry kPolicies[] = {
    {"morphling", make_morphling}, {"morphling-e", make_morphling_e}, {"morphling-r", make_morphling_r},
    {"morphling-n", make_morphling_n}, {"sia", make_sia}, {"synergy", make_synergy},
    {"antman", make_antman}, {"fifo", make_fifo},
};

}  // namespace

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Entry& e : kPolicies) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  for (const Entry& e : kPolicies)
    if (name == e.name) return e.make();
  throw Error(fmt::format("unknown policy {} (known: {})", quote(name), fmt::join(policy_names(), ", ")));
}

}  // namespace morph::policy
