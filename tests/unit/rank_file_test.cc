// A rank's checkpoint file written from and read into the trainer's own buffers
// (libmorph/state/rank_file.h), the one path of the C++ trainer and the Python module.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "libmorph/state/rank_file.h"
#include "libmorph/state/reshard_exec.h"
#include "libmorph/state/shard_map.h"
#include "libmorph/util/error.h"
#include "tests/state_fixture.h"
#include "tests/unit/test_support.h"

namespace morph::state {
namespace {

namespace fs = std::filesystem;

class RankFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("morph-rank-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Buffers of every tensor of `rank`, element k of tensor i holding 1000 i + k.
  std::map<std::string, std::vector<double>> buffers(const Layout& layout, int rank, bool zero = false) const {
    std::map<std::string, std::vector<double>> out;
    int i = 0;
    for (const LocalTensor& t : rank_tensors(spec_, layout, rank)) {
      std::uint64_t n = 1;
      for (std::int64_t d : t.decl.shape) n *= static_cast<std::uint64_t>(d);
      std::vector<double>& v = out[t.decl.name];
      v.resize(n);
      if (!zero) std::iota(v.begin(), v.end(), 1000.0 * i++);
    }
    return out;
  }

  static BufferOf lookup(std::map<std::string, std::vector<double>>& m) {
    return [&m](const TensorDecl& d) {
      const auto it = m.find(d.name);
      if (it == m.end()) throw Error("no " + d.name);
      return std::as_writable_bytes(std::span(it->second));
    };
  }

  // A committed checkpoint of `layout` from buffers(); returns its folder.
  std::string save(const Layout& layout, const std::string& name = "step_2") {
    const std::string dir = (dir_ / name).string();
    CheckpointStage stage(dir);
    CheckpointIndex index{layout, spec_, {2, 32}, {}, {}};
    for (int r = 0; r < layout.ranks(); ++r) {
      auto b = buffers(layout, r);
      const BufferOf of = lookup(b);
      index.files.push_back(write_rank_file(stage.path(), spec_, layout, r, [&](const TensorDecl& d) {
        return std::span<const std::byte>(of(d));
      }));
    }
    stage.commit(index);
    return dir;
  }

  fs::path dir_;
  StateSpec spec_ = test::gpt_spec({});
};

TEST_F(RankFile, WrittenFromBuffersAndReadBackIntoThem) {
  const Layout layout{2, 2, 1, 1};
  const std::string dir = save(layout);
  const CheckpointIndex index = index_for_resume(dir, spec_, layout);
  EXPECT_EQ(index.progress.step, 2u);
  for (int r = 0; r < layout.ranks(); ++r) {
    auto back = buffers(layout, r, true);
    read_rank_file(dir, index, r, lookup(back));
    EXPECT_EQ(back, buffers(layout, r)) << "rank " << r;
  }
}

TEST_F(RankFile, AnotherLayoutOrModelIsRefusedNamingWhatDiffers) {
  const std::string dir = save({1, 1, 1, 0});
  try {
    index_for_resume(dir, spec_, {1, 2, 1, 0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("morph reshard --from " + dir), std::string::npos) << e.what();
  }
  test::GptShape wide;
  wide.hidden = 32;
  // Another model under another layout too: resharding it first would not make it this one.
  for (const Layout& layout : {Layout{1, 1, 1, 0}, Layout{1, 2, 1, 0}}) {
    try {
      index_for_resume(dir, test::gpt_spec(wide), layout);
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("another model: parameter 0"), std::string::npos) << e.what();
    }
  }
}

// Review of the state code: under ZeRO the files of two ranks hold tensors of one name,
// dtype and shape, so rank 1's file saved as rank 0's (its checksum in the index) passed
// every check and loaded rank 1's optimizer shard into rank 0. Each file's stamp of its
// rank is now checked, on a resume and on a reshard.
TEST_F(RankFile, AFileSavedUnderAnotherRanksNameIsRefused) {
  const Layout layout{2, 1, 1, 1};
  const std::string dir = save(layout);
  ASSERT_EQ(rank_tensors(spec_, layout, 0).size(), rank_tensors(spec_, layout, 1).size());
  const fs::path zero = fs::path(dir) / rank_file_name(0), one = fs::path(dir) / rank_file_name(1);
  fs::rename(zero, dir_ / "swap");
  fs::rename(one, zero);
  fs::rename(dir_ / "swap", one);
  nlohmann::json j;
  std::ifstream(fs::path(dir) / "index.json") >> j;
  for (const char* field : {"bytes", "xxh3"}) std::swap(j["files"][0][field], j["files"][1][field]);
  std::ofstream(fs::path(dir) / "index.json") << j.dump(1) << '\n';
  const CheckpointIndex index = index_for_resume(dir, spec_, layout);
  auto back = buffers(layout, 0, true);
  try {
    read_rank_file(dir, index, 0, lookup(back));
    FAIL() << "rank 1's file was read as rank 0's";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), zero.string() + ": its metadata says rank '1', where the checkpoint needs rank '0'");
  }
  for (const auto& [name, v] : back)
    for (double x : v) ASSERT_EQ(x, 0.0) << name;  // nothing read
  const std::string target = (dir_ / "resharded").string();
  try {
    reshard_checkpoint(dir, target, Layout{1, 1, 1, 0});
    FAIL() << "resharded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("its metadata says rank '1'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(stage_folder(target)));
}

TEST_F(RankFile, AWrongBufferIsRefusedBeforeAnythingIsWrittenOrRead) {
  const Layout layout{1, 1, 1, 0};
  auto b = buffers(layout, 0);
  b.begin()->second.pop_back();  // one element short
  const std::string stage = (dir_ / "stage").string();
  fs::create_directories(stage);
  const BufferOf of = lookup(b);
  EXPECT_THROW(write_rank_file(stage, spec_, layout, 0, [&](const TensorDecl& d) { return std::span<const std::byte>(of(d)); }),
               Error);
  EXPECT_TRUE(fs::is_empty(stage));
  const std::string dir = save(layout);
  auto back = buffers(layout, 0, true);
  back.erase(std::prev(back.end()));  // the trainer lacks a tensor the file has
  EXPECT_THROW(read_rank_file(dir, index_for_resume(dir, spec_, layout), 0, lookup(back)), Error);
  for (const auto& [name, v] : back)
    for (double x : v) ASSERT_EQ(x, 0.0) << name;  // nothing read
}

}  // namespace
}  // namespace morph::state
