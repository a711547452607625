#include "tests/trainer/checkpoint_signal.h"

#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include "libmorph/util/error.h"

namespace morph::trainer {
namespace {

volatile std::sig_atomic_t g_requested = 0;

extern "C" void on_signal(int) { g_requested = 1; }

}  // namespace

void install_checkpoint_signal(int signal) {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(signal, &action, nullptr) != 0)
    throw Error(fmt::format("--checkpoint-signal: cannot handle signal {}: {}", signal, std::strerror(errno)));
}

bool checkpoint_requested(MPI_Comm comm) {
  int mine = g_requested ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  return any != 0;
}

}  // namespace morph::trainer
