// A stand-in for `morph reshard` in continuity.sh (RESHARD=path/reshard_driver):
//   reshard_driver --from DIR --to DIR --layout dp=..,tp=..,pp=..,zero=..
#include <cstdio>
#include <exception>
#include <string>

#include "libmorph/state/reshard_exec.h"

int main(int argc, char** argv) {
  std::string from, to, layout;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--from") from = argv[i + 1];
    else if (flag == "--to") to = argv[i + 1];
    else if (flag == "--layout") layout = argv[i + 1];
  }
  if (from.empty() || to.empty() || layout.empty() || argc != 7) {
    std::fprintf(stderr, "usage: reshard_driver --from DIR --to DIR --layout dp=..,tp=..,pp=..,zero=..\n");
    return 2;
  }
  try {
    const auto summary =
        morph::state::reshard_checkpoint(from, to, morph::state::parse_layout(layout, "--layout"));
    std::printf("reshard_driver: %s -> %s (%s) in %.3f s\n", from.c_str(), to.c_str(),
                morph::state::to_string(summary.plan.to).c_str(), summary.seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reshard_driver: %s\n", e.what());
    return 1;
  }
  return 0;
}
