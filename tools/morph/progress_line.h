// A status line for long commands: on stderr when it is a terminal, rewritten in place at
// most a few times a second and erased when done; nothing when stderr is not a terminal
// (scripts and tests see clean output).
#pragma once

#include <chrono>
#include <string>

namespace morph::cli {

class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine() { clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  // Shows what `text()` returns, when the last line shown is old enough (the first one
  // only once the command has run that long); cheap otherwise.
  template <class Text>
  void update(Text&& text) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + kPeriod;
    show(text());
  }
  // Erases the line.
  void clear();

 private:
  static constexpr std::chrono::milliseconds kPeriod{250};
  void show(const std::string& line);

  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point next_;
};

}  // namespace morph::cli
