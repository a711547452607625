// A tiny JABAS profile folder written for the hetero tests, with numbers small enough to
// follow by hand, and the path of the JABAS quickstart profile in the shared data.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "tests/unit/test_support.h"

namespace morph::test {

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

inline std::string comp_json(int lbs, int m, double data, double fwd, double bwd, double update, double copy) {
  return "{\"lbs\": " + std::to_string(lbs) + ", \"num_models\": " + std::to_string(m) +
         ", \"data_time\": " + std::to_string(data) + ", \"fwd_time\": " + std::to_string(fwd) +
         ", \"bwd_time\": " + std::to_string(bwd) + ", \"update_time\": " + std::to_string(update) +
         ", \"copy_time\": " + std::to_string(copy) + ", \"bn_sync_time\": 0.5}";
}

// Scratch profile folders, removed when the test program exits.
inline void remove_at_exit(const std::filesystem::path& dir) {
  static struct Dirs {
    std::vector<std::filesystem::path> paths;
    ~Dirs() {
      std::error_code ignored;
      for (const auto& p : paths) std::filesystem::remove_all(p, ignored);
    }
  } dirs;
  dirs.paths.push_back(dir);
}

// "fast": 2 GPUs, up to 2 workers at local batch 8 (profiled m = 1 and 2); "slow": 2 GPUs,
// one worker. Intra all-reduce measured = ideal + 1 at 1 GB/s, inter = 2 * ideal + 1 at
// 0.5 GB/s. Buckets 10, 20, 10 MiB (overlap, tau = 10 / 40).
inline std::filesystem::path write_tiny_profile(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("morph-hetero-" + std::to_string(getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  remove_at_exit(dir);
  write_file(dir / "cluster_info.json",
             R"({"fast": {"type": "F", "number": 2, "intra_network_bandwidth": 1e9, "inter_network_bandwidth": 5e8},
                 "slow": {"type": "S", "number": 2, "intra_network_bandwidth": 1e9, "inter_network_bandwidth": 5e8}})");
  const std::filesystem::path comp = dir / "cluster_comp_profile_data" / "8";
  write_file(comp / "fast" / "a_8_1.json", comp_json(8, 1, 1, 10, 20, 4, 0));
  write_file(comp / "fast" / "a_8_2.json", comp_json(8, 2, 2, 16, 32, 4, 2));
  write_file(comp / "slow" / "a_8_1.json", comp_json(8, 1, 1, 20, 40, 4, 0));
  const std::filesystem::path mem = dir / "cluster_mem_profile_data" / "8";
  write_file(mem / "fast" / "max_memory_profile_info.json", R"({"max_num_models": 2})");
  write_file(mem / "slow" / "max_memory_profile_info.json", R"({"max_num_models": 1})");
  write_file(dir / "comm_profile_data" / "intra_comm_profile_data.txt", "1,2\n2,3\n3,4\n");
  write_file(dir / "comm_profile_data" / "inter_comm_profile_data.txt", "1,3\n2,5\n3,7\n");
  write_file(dir / "bucket_profile_data" / "a_bucket_size_profile.json", R"({"bucket_size_distribution": [10, 20, 10]})");
  return dir;
}

// JABAS's quickstart profile (../shared/data/jabas-quickstart, or $MORPH_JABAS_PROFILE),
// or "" when it is absent.
inline std::string jabas_quickstart_dir() {
  std::string dir;
  if (const char* env = std::getenv("MORPH_JABAS_PROFILE"); env != nullptr && *env != '\0') dir = env;
  else dir = source_dir() + "/../shared/data/jabas-quickstart";
  return std::filesystem::is_regular_file(dir + "/cluster_info.json") ? dir : std::string{};
}

#define MORPH_REQUIRE_JABAS_PROFILE(dir)                                                         \
  const std::string dir = ::morph::test::jabas_quickstart_dir();                                 \
  if (dir.empty()) GTEST_SKIP() << "JABAS quickstart profile not found (set MORPH_JABAS_PROFILE " \
                                   "or put shared/data/jabas-quickstart beside the source tree)"

}  // namespace morph::test
