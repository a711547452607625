// make_checkpoint DIR LAYOUT [LAYERS HIDDEN VOCAB]: a synthetic GPT-like checkpoint for
// the command-line tests of `morph reshard` (tests/state_fixture.h).
#include <cstdio>
#include <exception>
#include <string>

#include "libmorph/util/parse.h"
#include "tests/state_fixture.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 6) {
    std::fprintf(stderr, "usage: make_checkpoint DIR LAYOUT [LAYERS HIDDEN VOCAB]\n");
    return 2;
  }
  try {
    morph::test::GptShape g;
    if (argc == 6) {
      g.layers = static_cast<int>(morph::parse_int(argv[3], "LAYERS", 1, 1000));
      g.hidden = morph::parse_int(argv[4], "HIDDEN", 1, 1 << 16);
      g.vocab = morph::parse_int(argv[5], "VOCAB", 1, 1 << 22);
    }
    morph::test::write_synthetic_checkpoint(argv[1], morph::test::gpt_spec(g),
                                            morph::state::parse_layout(argv[2], "LAYOUT"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_checkpoint: %s\n", e.what());
    return 1;
  }
  return 0;
}
