// What the simulated policies may know of each job's length (`morph simulate
// --job-length`), so that a simulation sees what morphd will (issue 11). The simulator's
// progress and completions always use the trace's true steps.
#pragma once

#include <string_view>
#include <vector>

#include "libmorph/sim/simulator.h"

namespace morph::sim {

enum class JobLength {
  exact,     // the trace's steps, as if every user declared them exactly (--morph-iterations)
  declared,  // a Slurm time limit: the trace's duration rounded up to a usual limit
  unknown,   // nothing: the policies estimate from attained service
};

// "exact", "declared" or "unknown"; morph::Error naming `what` otherwise.
JobLength parse_job_length(std::string_view text, std::string_view what);
const char* to_string(JobLength length);

// The time limit a user would give a job that runs `duration_s`: the next of the limits
// sites commonly offer (15 and 30 minutes; 1, 2, 4, 8, 12 hours; 1, 2, 3 and 7 days),
// then whole weeks. Users over-declare: a limit is at least the run time.
double slurm_time_limit_s(double duration_s);

// Sets what each job's policy view knows of its length under `length` (declared: a time
// limit from the workload's duration, none where that is 0, unknown).
void declare_lengths(std::vector<SimJob>& jobs, JobLength length);

}  // namespace morph::sim
