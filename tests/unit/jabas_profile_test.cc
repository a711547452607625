// Reading JABAS profile folders: the tiny synthetic one, the quickstart, and errors that
// name the file and field.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "libmorph/hetero/jabas_profile.h"
#include "libmorph/util/error.h"
#include "tests/unit/hetero_support.h"

namespace morph {
namespace {

namespace fs = std::filesystem;

std::string load_error(const fs::path& dir) {
  try {
    load_jabas_profile(dir.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HeteroProfile, ReadsTinyProfile) {
  const JabasProfile p = load_jabas_profile(test::write_tiny_profile("read").string());
  ASSERT_EQ(p.servers.size(), 2u);
  const JabasServer* fast = p.find("fast");
  ASSERT_NE(fast, nullptr);
  EXPECT_EQ(fast->gpu, "F");
  EXPECT_EQ(fast->gpus, 2);
  ASSERT_EQ(fast->by_local_batch.count(8), 1u);
  const JabasBatchProfile& b = fast->by_local_batch.at(8);
  EXPECT_EQ(b.max_workers, 2);
  ASSERT_EQ(b.comp.size(), 2u);
  EXPECT_EQ(b.comp[1].workers, 2);
  EXPECT_DOUBLE_EQ(b.comp[1].copy_ms, 2);
  EXPECT_EQ(p.intra.ideal_ms.size(), 3u);
  EXPECT_EQ(p.bucket_mib, (std::vector<double>{10, 20, 10}));
}

TEST(HeteroProfile, ReadsQuickstart) {
  MORPH_REQUIRE_JABAS_PROFILE(dir);
  const JabasProfile p = load_jabas_profile(dir);
  ASSERT_EQ(p.servers.size(), 2u);
  EXPECT_EQ(p.servers[0].name, "node0");
  EXPECT_EQ(p.servers[0].gpu, "Tesla V100-PCIE-16GB");
  EXPECT_EQ(p.servers[0].by_local_batch.size(), 4u);  // 32, 64, 96, 128
  EXPECT_EQ(p.servers[1].by_local_batch.size(), 5u);  // and 160
  EXPECT_EQ(p.servers[1].by_local_batch.at(32).max_workers, 4);
  EXPECT_EQ(p.bucket_mib.size(), 5u);
}

TEST(HeteroProfile, ErrorsNameTheFileAndField) {
  fs::path dir = test::write_tiny_profile("missing");
  fs::remove(dir / "comm_profile_data" / "inter_comm_profile_data.txt");
  EXPECT_NE(load_error(dir).find("inter_comm_profile_data.txt"), std::string::npos) << load_error(dir);

  dir = test::write_tiny_profile("malformed");
  test::write_file(dir / "cluster_comp_profile_data" / "8" / "slow" / "a_8_1.json", "{\"lbs\": 8,");
  EXPECT_NE(load_error(dir).find("a_8_1.json: not valid JSON"), std::string::npos) << load_error(dir);

  dir = test::write_tiny_profile("field");
  test::write_file(dir / "cluster_comp_profile_data" / "8" / "slow" / "a_8_1.json",
                   R"({"lbs": 8, "num_models": 1, "data_time": 1, "fwd_time": 1, "update_time": 1, "copy_time": 0})");
  EXPECT_NE(load_error(dir).find("a_8_1.json: missing \"bwd_time\""), std::string::npos) << load_error(dir);

  dir = test::write_tiny_profile("odd");
  test::write_file(dir / "cluster_info.json",
                   R"({"fast": {"type": "F", "number": 3, "intra_network_bandwidth": 1, "inter_network_bandwidth": 1},
                       "slow": {"type": "S", "number": 2, "intra_network_bandwidth": 1, "inter_network_bandwidth": 1}})");
  EXPECT_NE(load_error(dir).find("fast: \"number\" must be even"), std::string::npos) << load_error(dir);
  // Not truncated (4.9 to 4) nor wrapped (2^32 + 4 to 4); no bandwidth that makes every
  // plan infinite.
  for (const char* number : {"4.9", "4294967300", "-4294967300"}) {
    test::write_file(dir / "cluster_info.json",
                     fmt::format(R"({{"fast": {{"type": "F", "number": {}, "intra_network_bandwidth": 1e9,
                                     "inter_network_bandwidth": 1e9}}}})",
                                 number));
    EXPECT_NE(load_error(dir).find(fmt::format("fast: \"number\" must be an integer, not {}", number)),
              std::string::npos)
        << load_error(dir);
  }
  // Counts the search would overflow or loop over for ever are refused.
  test::write_file(dir / "cluster_info.json",
                   R"({"fast": {"type": "F", "number": 1073741824, "intra_network_bandwidth": 1e9,
                                "inter_network_bandwidth": 1e9}})");
  EXPECT_NE(load_error(dir).find("fast: \"number\" 1073741824 is more than 65536 GPUs"), std::string::npos)
      << load_error(dir);
  test::write_file(dir / "cluster_info.json",
                   R"({"fast": {"type": "F", "number": 2, "intra_network_bandwidth": 1e9, "inter_network_bandwidth": 1e-300}})");
  EXPECT_NE(load_error(dir).find("fast: network bandwidths must be at least 1e6 bytes/s"), std::string::npos)
      << load_error(dir);

  dir = test::write_tiny_profile("comm");
  test::write_file(dir / "comm_profile_data" / "intra_comm_profile_data.txt", "1,2\n2;3\n");
  EXPECT_NE(load_error(dir).find("intra_comm_profile_data.txt:2: expected ideal_ms,measured_ms"), std::string::npos)
      << load_error(dir);

  dir = test::write_tiny_profile("models");
  test::write_file(dir / "cluster_mem_profile_data" / "8" / "slow" / "max_memory_profile_info.json",
                   R"({"max_num_models": 268435456})");
  EXPECT_NE(load_error(dir).find("\"max_num_models\" must be 1-1024, not 268435456"), std::string::npos)
      << load_error(dir);

  dir = test::write_tiny_profile("mem");
  fs::remove(dir / "cluster_mem_profile_data" / "8" / "slow" / "max_memory_profile_info.json");
  EXPECT_NE(load_error(dir).find("slow/max_memory_profile_info.json"), std::string::npos) << load_error(dir);

  dir = test::write_tiny_profile("server");
  fs::rename(dir / "cluster_comp_profile_data" / "8" / "slow", dir / "cluster_comp_profile_data" / "8" / "other");
  EXPECT_NE(load_error(dir).find("server 'other' is not in cluster_info.json"), std::string::npos) << load_error(dir);
}

}  // namespace
}  // namespace morph
