// A JABAS profile folder (seed 004 §5.1; the layout of JABAS's examples/*/quickstart):
//   cluster_info.json                                   servers: GPU type, count, bandwidths
//   cluster_comp_profile_data/<lbs>/<server>/*.json     one iteration with m workers on one GPU (ms)
//   cluster_mem_profile_data/<lbs>/<server>/max_memory_profile_info.json   most workers that fit
//   comm_profile_data/{intra,inter}_comm_profile_data.txt                 ideal_ms,measured_ms
//   bucket_profile_data/<one file>.json                 gradient bucket sizes (MiB), last one last
#pragma once

#include <map>
#include <string>
#include <vector>

namespace morph {

// One computation profile: m virtual workers (VSWs) on one GPU, each with the local batch.
struct JabasCompProfile {
  int workers = 0;  // m (JABAS "num_models")
  double data_ms = 0;
  double fwd_ms = 0;
  double bwd_ms = 0;
  double update_ms = 0;   // t_optim
  double copy_ms = 0;     // t_copy of all m - 1 weight copies
  double bn_sync_ms = 0;  // per worker
};

// A server's profiles at one local batch size.
struct JabasBatchProfile {
  int max_workers = 0;                  // n_max from the memory profile
  std::vector<JabasCompProfile> comp;   // by workers, ascending, one with workers = 1
  std::string comp_dir;                 // for errors
};

struct JabasServer {
  std::string name;
  std::string gpu;
  int gpus = 0;
  double intra_bandwidth_bytes_per_s = 0;
  double inter_bandwidth_bytes_per_s = 0;
  std::map<int, JabasBatchProfile> by_local_batch;
};

// (ideal_ms, measured_ms) pairs of all-reduce runs: the data of Eq. (3).
struct AllreduceSamples {
  std::vector<double> ideal_ms;
  std::vector<double> measured_ms;
  std::string path;
};

struct JabasProfile {
  std::string dir;
  std::vector<JabasServer> servers;  // by name
  AllreduceSamples intra;
  AllreduceSamples inter;
  std::vector<double> bucket_mib;    // b_1 .. b_l

  const JabasServer* find(const std::string& name) const;
};

// Bounds load_jabas_profile() holds a profile to: GPUs per server ("number"; the search
// sums them and sizes tables by them), virtual workers per GPU ("max_num_models";
// JABAS's own profiles have at most 4) and gradient bucket sizes.
inline constexpr int kMaxServerGpus = 65536;
inline constexpr int kMaxModelsPerGpu = 1024;
inline constexpr double kMaxBucketMiB = 1 << 20;  // a gradient bucket of 1 TiB

// Reads and checks a profile folder; every error names the file (and field or line).
JabasProfile load_jabas_profile(const std::string& dir);

}  // namespace morph
