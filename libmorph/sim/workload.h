// A trace of training jobs to replay, in the Morphling artifact's workload format:
//   name,submission_time,duration,application,num_gpus,num_cpus,bandwidth,exec_plan,steps,is_sla
// plus optional `tenant` and `partition` columns. duration is the job's run time on its requested GPUs
// and plan; steps the iterations it trains. bandwidth is read but not used.
#pragma once

#include <string>
#include <vector>

namespace morph::sim {

struct TraceJob {
  std::string where;  // file:line, for messages
  std::string name;
  double submit_s = 0;
  double duration_s = 0;
  std::string app;
  int gpus = 0;
  int cpus = 0;
  std::string exec_plan;  // family name or PP,TP,DP digits, as in the artifact's traces
  double steps = 0;
  bool guaranteed = false;
  std::string tenant = "default";
  std::string partition;  // Slurm partitions, joined by '+' (sim/partitions.h); "": the default
};

// Errors name the file, line and column; duplicate job names are errors.
std::vector<TraceJob> read_workload(const std::string& path);

}  // namespace morph::sim
