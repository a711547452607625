// One profiling run of `morph-profile job`: srun starts morphrun and the trainer under a
// plan; once the metrics file holds enough iterations the step is stopped with SIGTERM.
#pragma once

#include <string>
#include <vector>

namespace morph::profile {

struct JobRunSpec {
  std::vector<std::string> argv;  // srun ... morphrun ... -- COMMAND ARGS
  std::string metrics_path;       // morphrun --metrics
  std::string log_path;           // srun's stdout and stderr
  int iterations_wanted = 0;      // warm-up + measured
  double timeout_s = 300;         // whole run, start included
};

struct JobRunResult {
  std::vector<double> iteration_s;  // SECONDS of each metrics record, in order
  double wall_s = 0;
  std::string failure;              // empty: enough iterations were recorded
};

// Starts spec.argv, watches the metrics file, stops the step with SIGTERM (SIGKILL 30 s
// later) when enough iterations or the timeout came, and reaps it. Never throws for a
// failed run: the reason is in `failure`.
JobRunResult run_profile_step(const JobRunSpec& spec);

// Median of `seconds` after the first `warmup`; 0 when nothing is left.
double median_after_warmup(const std::vector<double>& seconds, int warmup);

}  // namespace morph::profile
