// What a simulation measured, as Table 4 of seed 000 reports it: job completion times
// (average and P99), makespan, queueing, restarts and GPU time, for all jobs and split by
// guaranteed and best-effort.
#pragma once

#include <string>
#include <vector>

#include "libmorph/sim/simulator.h"

namespace morph::sim {

struct Summary {
  int jobs = 0;
  int finished = 0;
  double avg_jct_s = 0;
  double p99_jct_s = 0;  // nearest rank
  double avg_queue_s = 0;     // of the finished jobs: the wait for their first start,
  double avg_progress_s = 0;  // their time making progress; the rest of a JCT is restarts
                              // and time without GPUs after the first start
  double restarts_per_job = 0;
  double gpu_hours = 0;
  double slow_share = 0;  // of the running time, below the speed of the request (guaranteed jobs)
};

struct Report {
  std::string policy;
  Summary all, guaranteed, best_effort;
  double makespan_s = 0;  // first submission to last completion
  long measured_runs = 0;
  long predicted_runs = 0;
  double predicted_share = 0;  // of the time jobs made progress
  long refits = 0;              // online refits tried, and kept (SimOptions::refit)
  long refits_kept = 0;
  std::vector<std::string> never_finished;
  long rounds = 0;
  long skipped_rounds = 0;
  double wall_s = 0;
};

Report summarize(const SimResult& result);

}  // namespace morph::sim
