#include "tools/morph/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace morph::cli {

ProgressLine::ProgressLine()
    : enabled_(isatty(STDERR_FILENO) == 1), next_(std::chrono::steady_clock::now() + kPeriod) {}

void ProgressLine::show(const std::string& line) {
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace morph::cli
