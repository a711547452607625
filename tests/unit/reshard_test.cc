// Resharding between layouts (Tenplex, seed 003): on random GPT-like states and random
// pairs of layouts, every new byte equals the assembled global tensor, each is read once,
// and resharding back gives the original files bit for bit.
#include "libmorph/state/reshard_exec.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "libmorph/util/error.h"
#include "tests/state_fixture.h"

namespace morph::state {
namespace {

namespace fs = std::filesystem;

class ScratchDir {
 public:
  ScratchDir() : path_(fs::temp_directory_path() / ("morph_reshard_" + std::to_string(::getpid()) + "_" +
                                                     std::to_string(counter_++))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every tensor of every file of `dir` holds what `layout` says: global values or zeros.
void expect_assembled(const std::string& dir, const StateSpec& spec, const Layout& layout) {
  std::vector<char> expected;
  for (int r = 0; r < layout.ranks(); ++r) {
    const SafetensorsReader file((fs::path(dir) / rank_file_name(r)).string());
    const std::vector<LocalTensor> tensors = rank_tensors(spec, layout, r);
    ASSERT_EQ(file.header().tensors.size(), tensors.size()) << "rank " << r;
    for (const LocalTensor& t : tensors) {
      const TensorEntry* e = file.header().find(t.decl.name);
      ASSERT_NE(e, nullptr) << t.decl.name;
      test::fill_local(t, expected);
      std::vector<char> got(e->bytes());
      if (!got.empty()) file.read(*e, 0, got.data(), got.size());
      ASSERT_EQ(got, expected) << "rank " << r << " tensor " << t.decl.name << " under " << to_string(layout);
    }
  }
}

Layout random_layout(std::mt19937& rng, const test::GptShape& g) {
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(values.size()) - 1)(rng));
  };
  Layout l;
  l.tp = pick({1, 2, 4});
  l.pp = std::uniform_int_distribution<int>(1, g.layers)(rng);
  l.dp = pick({1, 2, 3, 4});
  l.zero = std::uniform_int_distribution<int>(0, 3)(rng);
  return l;
}

// A small GPT of 1 to 4 layers for the planning tests, tied embeddings every other trial.
test::GptShape small_shape(std::mt19937& rng, int trial) {
  test::GptShape g;
  g.layers = std::uniform_int_distribution<int>(1, 4)(rng);
  g.hidden = 8;
  g.vocab = 37;
  g.tied = trial % 2 == 0;
  return g;
}

TEST(Reshard, RandomLayoutPairsAssembleTheGlobalStateAndRoundTripBitForBit) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 24; ++trial) {
    test::GptShape g;
    g.layers = std::uniform_int_distribution<int>(1, 5)(rng);
    g.hidden = 4 * std::uniform_int_distribution<int>(1, 6)(rng);
    g.vocab = std::uniform_int_distribution<int>(5, 70)(rng);
    g.tied = trial % 2 == 0;
    g.vocab_multiple = std::uniform_int_distribution<int>(1, 8)(rng);
    g.dtype = trial % 3 == 0 ? Dtype::f32 : Dtype::f64;
    const StateSpec spec = test::gpt_spec(g);
    const Layout a = random_layout(rng, g);
    const Layout b = random_layout(rng, g);
    SCOPED_TRACE(fmt::format("trial {}: {} -> {}, {} layers, hidden {}, vocab {}", trial, to_string(a), to_string(b),
                             g.layers, g.hidden, g.vocab));
    ScratchDir dir;
    test::write_synthetic_checkpoint(dir / "a", spec, a);
    expect_assembled(dir / "a", spec, a);

    const ReshardSummary there = reshard_checkpoint(dir / "a", dir / "b", b);
    expect_assembled(dir / "b", spec, b);
    const CheckpointIndex ib = read_index(dir / "b");
    EXPECT_EQ(ib.layout, b);
    EXPECT_EQ(ib.progress.samples, 7u * 64u);
    // Each new byte that is not padding is read exactly once.
    std::uint64_t payload = 0;
    for (int r = 0; r < b.ranks(); ++r)
      for (const LocalTensor& t : rank_tensors(spec, b, r))
        for (const Segment& s : t.segments)
          if (s.global >= 0) payload += s.count * dtype_bytes(t.decl.dtype);
    EXPECT_EQ(there.bytes_read, payload);

    reshard_checkpoint(dir / "b", dir / "back", a);
    for (int r = 0; r < a.ranks(); ++r)
      ASSERT_EQ(file_bytes(dir / "a/" + rank_file_name(r)), file_bytes(dir / "back/" + rank_file_name(r)))
          << "rank " << r;
  }
}

TEST(Reshard, ReadsFromTheNodeThatHasACopy) {
  test::GptShape g;
  const StateSpec spec = test::gpt_spec(g);
  ScratchDir dir;
  const Layout a{2, 2, 1, 0};  // two DP replicas of each TP shard
  test::write_synthetic_checkpoint(dir / "a", spec, a);
  const CheckpointIndex index = read_index(dir / "a");
  RankNodes nodes;
  nodes.from = {"n1", "n1", "n2", "n2"};  // dp rank 0 on n1, dp rank 1 on n2
  nodes.to = {"n2", "n2"};                // the new job runs on n2 only
  const ReshardPlan plan = plan_reshard(spec, a, read_headers(dir / "a", index, true), Layout{1, 2, 1, 0}, nodes);
  EXPECT_EQ(plan.bytes_between_nodes.count({"n1", "n2"}), 0u);
  EXPECT_EQ(plan.bytes_between_nodes.at({"n2", "n2"}), plan.bytes);
}

TEST(Reshard, ANodeListOfAnotherLengthThanItsLayoutIsRefusedWithBothSizes) {
  const StateSpec spec = test::gpt_spec({});
  ScratchDir dir;
  const Layout a{2, 1, 1, 0};
  test::write_synthetic_checkpoint(dir / "a", spec, a);
  const std::vector<SafetensorsHeader> headers = read_headers(dir / "a", read_index(dir / "a"), true);
  auto error_of = [&](const RankNodes& nodes) {
    try {
      plan_reshard(spec, a, headers, Layout{4, 1, 1, 0}, nodes);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({{"n1", "n1", "n2"}, {}}),
            "the node list of the old ranks has length 3, but the old layout dp=2,tp=1,pp=1,zero=0 has 2 ranks");
  EXPECT_EQ(error_of({{}, {"n1"}}),
            "the node list of the new ranks has length 1, but the new layout dp=4,tp=1,pp=1,zero=0 has 4 ranks");
  EXPECT_EQ(error_of({{"n1", "n2"}, {"n1", "n1", "n2", "n2"}}), "no error");
}

TEST(Reshard, TensorParallelFourToTwoMergesNeighbouringShards) {
  test::GptShape g;
  g.tied = false;
  const StateSpec spec = test::gpt_spec(g);
  ScratchDir dir;
  test::write_synthetic_checkpoint(dir / "a", spec, Layout{1, 4, 1, 0});
  const CheckpointIndex index = read_index(dir / "a");
  const ReshardPlan plan = plan_reshard(spec, index.layout, read_headers(dir / "a", index, true), Layout{1, 2, 1, 0});
  // A column-parallel weight's new shard is two whole old shards: two reads, not rows.
  const RankPlan& r0 = plan.ranks[0];
  int qkv = -1;
  for (std::size_t i = 0; i < r0.tensors.size(); ++i)
    if (r0.tensors[i].name == "layers.0.self_attention.query_key_value.weight") qkv = static_cast<int>(i);
  ASSERT_GE(qkv, 0);
  int reads = 0;
  for (const CopyOp& op : r0.ops) reads += op.tensor == qkv ? 1 : 0;
  EXPECT_EQ(reads, 2);
}

bool same_decl(const TensorDecl& a, const TensorDecl& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape;
}

bool same_op(const CopyOp& a, const CopyOp& b) {
  return a.source_rank == b.source_rank && a.source_offset == b.source_offset && a.tensor == b.tensor &&
         a.offset == b.offset && a.bytes == b.bytes;
}

// Node names: old and new ranks spread over `count` nodes in blocks.
std::vector<std::string> block_nodes(int ranks, int count) {
  std::vector<std::string> out;
  for (int r = 0; r < ranks; ++r) out.push_back(fmt::format("n{}", r * count / ranks));
  return out;
}

// What a process of morph-reshard-mpi plans: its ranks only, each as the whole plan has it.
TEST(Reshard, PlanningSomeRanksGivesThemTheReadsOfTheWholePlan) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    const test::GptShape g = small_shape(rng, trial);
    const StateSpec spec = test::gpt_spec(g);
    const Layout a = random_layout(rng, g);
    Layout b = random_layout(rng, g);
    b.dp *= 2;  // replicas to share or to partition
    RankNodes nodes;
    if (trial % 3 != 0) nodes = {block_nodes(a.ranks(), 2), block_nodes(b.ranks(), 2)};
    SCOPED_TRACE(fmt::format("trial {}: {} -> {}", trial, to_string(a), to_string(b)));
    ScratchDir dir;
    test::write_synthetic_checkpoint(dir / "a", spec, a);
    const std::vector<SafetensorsHeader> headers = read_headers(dir / "a", read_index(dir / "a"), false);
    const ReshardPlan whole = plan_reshard(spec, a, headers, b, nodes);
    ASSERT_EQ(static_cast<int>(whole.ranks.size()), b.ranks());
    const int processes = 3;
    std::uint64_t bytes = 0;
    for (int process = 0; process < processes; ++process) {
      std::vector<int> mine;
      for (int r = b.ranks() - 1 - process; r >= 0; r -= processes) mine.push_back(r);  // any order
      const ReshardPlan part = plan_reshard(spec, a, headers, b, nodes, mine);
      ASSERT_EQ(part.ranks.size(), mine.size());
      for (const RankPlan& got : part.ranks) {
        const RankPlan& want = whole.rank(got.rank);
        ASSERT_TRUE(std::equal(got.tensors.begin(), got.tensors.end(), want.tensors.begin(), want.tensors.end(), same_decl))
            << "rank " << got.rank;
        ASSERT_TRUE(std::equal(got.ops.begin(), got.ops.end(), want.ops.begin(), want.ops.end(), same_op))
            << "rank " << got.rank;
      }
      EXPECT_THROW(part.rank(b.ranks() - 1 - ((process + 1) % processes)), Error);  // another process's
      bytes += part.bytes;
    }
    EXPECT_EQ(bytes, whole.bytes);  // every byte counted once over the processes
  }
}

// Headers of `layout`'s files without files, tensors in file order. With `uneven`, files
// leave 8 bytes before some tensors, differently for each rank and tensor, so that the
// data-parallel copies of a tensor lie at several file offsets, grouped anew per tensor.
std::vector<SafetensorsHeader> synthetic_headers(const StateSpec& spec, const Layout& layout, bool uneven) {
  std::vector<SafetensorsHeader> out(static_cast<std::size_t>(layout.ranks()));
  for (int r = 0; r < layout.ranks(); ++r) {
    SafetensorsHeader& h = out[static_cast<std::size_t>(r)];
    h.data_offset = 128;
    std::uint64_t at = 0;
    int i = 0;
    for (const LocalTensor& t : rank_tensors(spec, layout, r)) {
      if (uneven && (r * 7 + i++ * 3) % 5 < 2) at += 8;
      TensorEntry e{t.decl.name, t.decl.dtype, t.decl.shape, at, at};
      e.end = at + e.elements() * dtype_bytes(t.decl.dtype);
      at = e.end;
      h.tensors.push_back(std::move(e));
    }
  }
  return out;
}

// The reads of new rank `rank`'s file as the planner made them when it kept one entry per
// old file and run (3057fae): for every elementary interval of the old runs, the least
// (other node, not the previous run's file, turn from the rank's number) over every old
// rank holding it; without ZeRO, a replica on the node of a lower rank of its TP and PP
// coordinates reads what that rank reads.
std::vector<CopyOp> reference_reads(const StateSpec& spec, const Layout& from,
                                    const std::vector<SafetensorsHeader>& headers, const Layout& to,
                                    const RankNodes& nodes, int rank) {
  auto from_node = [&](int r) { return nodes.from.empty() ? std::string() : nodes.from[static_cast<std::size_t>(r)]; };
  auto to_node = [&](int r) { return nodes.to.empty() ? std::string() : nodes.to[static_cast<std::size_t>(r)]; };
  if (to.zero == 0)
    for (int r = 0; r < rank; ++r)
      if (coords_of(to, r).tp == coords_of(to, rank).tp && coords_of(to, r).pp == coords_of(to, rank).pp &&
          to_node(r) == to_node(rank)) {
        rank = r;
        break;
      }
  struct Piece {
    std::uint64_t start, count, offset;
    int rank;
  };
  std::vector<std::vector<Piece>> pieces(static_cast<std::size_t>(global_count(spec)));
  for (int r = 0; r < from.ranks(); ++r)
    for (const LocalTensor& t : rank_tensors(spec, from, r)) {
      const SafetensorsHeader& h = headers[static_cast<std::size_t>(r)];
      std::uint64_t at = h.data_offset + h.find(t.decl.name)->begin;
      for (const Segment& s : t.segments) {
        if (s.global >= 0) pieces[static_cast<std::size_t>(s.global)].push_back({s.start, s.count, at, r});
        at += s.count * dtype_bytes(t.decl.dtype);
      }
    }
  const int n = from.ranks();
  std::vector<CopyOp> ops;
  int previous = -1;
  int tensor = 0;
  for (const LocalTensor& t : rank_tensors(spec, to, rank)) {
    const std::uint64_t element = dtype_bytes(t.decl.dtype);
    std::uint64_t at = 0;
    for (const Segment& s : t.segments) {
      for (std::uint64_t x = s.start; s.global >= 0 && x < s.start + s.count;) {
        std::uint64_t stop = s.start + s.count;
        const Piece* best = nullptr;
        auto key = [&](const Piece& p) {
          return std::make_tuple(from_node(p.rank) == to_node(rank) ? 0 : 1, p.rank == previous ? 0 : 1,
                                 (p.rank - rank % n + n) % n);
        };
        for (const Piece& p : pieces[static_cast<std::size_t>(s.global)]) {
          for (std::uint64_t bound : {p.start, p.start + p.count})
            if (bound > x) stop = std::min(stop, bound);
          if (p.start <= x && x < p.start + p.count && (best == nullptr || key(p) < key(*best))) best = &p;
        }
        EXPECT_NE(best, nullptr);
        if (best == nullptr) return ops;
        const CopyOp op{best->rank, best->offset + (x - best->start) * element, tensor, (at + x - s.start) * element,
                        (stop - x) * element};
        if (!ops.empty() && ops.back().source_rank == op.source_rank && ops.back().tensor == tensor &&
            ops.back().source_offset + ops.back().bytes == op.source_offset &&
            ops.back().offset + ops.back().bytes == op.offset)
          ops.back().bytes += op.bytes;
        else
          ops.push_back(op);
        previous = best->rank;
        x = stop;
      }
      at += s.count;
    }
    ++tensor;
  }
  return ops;
}

// The old files' index keeps one entry for the data-parallel copies of a run; the reads
// must stay those of one entry per copy, in whole plans and in plans of some ranks, with
// copies at other offsets, on three nodes, read from these and from a fourth.
TEST(Reshard, ReadsAreThoseOfAnIndexWithOneEntryPerOldFile) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const test::GptShape g = small_shape(rng, trial);
    const StateSpec spec = test::gpt_spec(g);
    Layout a = random_layout(rng, g);
    a.dp *= 2;  // copies to index once
    const Layout b = random_layout(rng, g);
    RankNodes nodes;
    if (trial % 4 != 0) {
      std::uniform_int_distribution<int> node(1, 4);  // n4 holds no old file
      for (int r = 0; r < a.ranks(); ++r) nodes.from.push_back(fmt::format("n{}", 1 + node(rng) % 3));
      for (int r = 0; r < b.ranks(); ++r) nodes.to.push_back(fmt::format("n{}", node(rng)));
    }
    SCOPED_TRACE(fmt::format("trial {}: {} -> {}", trial, to_string(a), to_string(b)));
    const std::vector<SafetensorsHeader> headers = synthetic_headers(spec, a, trial % 2 == 0);
    const ReshardPlan whole = plan_reshard(spec, a, headers, b, nodes);
    std::vector<int> some;
    for (int r = 0; r < b.ranks(); ++r)
      if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) some.push_back(r);
    const ReshardPlan part = plan_reshard(spec, a, headers, b, nodes, some);
    ASSERT_EQ(part.ranks.size(), some.size());
    for (int r = 0; r < b.ranks(); ++r) {
      const std::vector<CopyOp> want = reference_reads(spec, a, headers, b, nodes, r);
      const RankPlan& got = whole.rank(r);
      ASSERT_TRUE(std::equal(got.ops.begin(), got.ops.end(), want.begin(), want.end(), same_op)) << "rank " << r;
      if (std::binary_search(some.begin(), some.end(), r)) {
        const RankPlan& got_part = part.rank(r);
        ASSERT_TRUE(std::equal(got_part.ops.begin(), got_part.ops.end(), want.begin(), want.end(), same_op))
            << "rank " << r << " planned with some ranks";
      }
    }
  }
}

TEST(Reshard, DataParallelReplicasOnANodeShareOnePlannedFile) {
  test::GptShape g;
  const StateSpec spec = test::gpt_spec(g);
  ScratchDir dir;
  const Layout a{2, 2, 1, 0};
  test::write_synthetic_checkpoint(dir / "a", spec, a);
  const std::vector<SafetensorsHeader> headers = read_headers(dir / "a", read_index(dir / "a"), false);
  const Layout b{4, 2, 2, 0};  // 16 ranks: 4 (tp, pp) files, 4 copies of each
  const ReshardPlan one_node = plan_reshard(spec, a, headers, b);
  EXPECT_EQ(one_node.files.size(), 4u);
  for (const RankPlan& r : one_node.ranks) {
    const RankCoords c = coords_of(b, r.rank);
    const RankPlan& first = one_node.rank(rank_of(b, {0, c.tp, c.pp}));
    EXPECT_EQ(r.ops.data(), first.ops.data()) << "rank " << r.rank;  // the same storage, not a copy
    EXPECT_EQ(r.tensors.data(), first.tensors.data()) << "rank " << r.rank;
  }
  // Replicas on two nodes: one file per node, each read from its own node's copy.
  RankNodes nodes{{"n1", "n1", "n2", "n2"}, {}};  // old dp rank 0 on n1, 1 on n2
  for (int r = 0; r < b.ranks(); ++r) nodes.to.push_back(coords_of(b, r).dp < 2 ? "n1" : "n2");
  const ReshardPlan two_nodes = plan_reshard(spec, a, headers, b, nodes);
  EXPECT_EQ(two_nodes.files.size(), 8u);
  EXPECT_EQ(two_nodes.bytes_between_nodes.count({"n1", "n2"}), 0u);
  EXPECT_EQ(two_nodes.bytes_between_nodes.count({"n2", "n1"}), 0u);
  EXPECT_EQ(two_nodes.bytes, one_node.bytes);  // each replica counted
  // ZeRO partitions the optimizer states over DP ranks: no two files are alike.
  const ReshardPlan zero = plan_reshard(spec, a, headers, Layout{4, 2, 2, 1});
  EXPECT_EQ(zero.files.size(), 16u);
  // A process with no new rank to build (more processes than ranks) plans nothing.
  EXPECT_TRUE(plan_reshard(spec, a, headers, b, {}, {}).ranks.empty());
  // A rank outside the layout is refused, naming it.
  try {
    plan_reshard(spec, a, headers, b, {}, {3, 16});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "new rank 16 is not in the new layout dp=4,tp=2,pp=2,zero=0 (16 ranks)");
  }
}

// The single-machine reshard plans a file when it builds it and drops the plan after:
// it holds the reads of at most threads + 1 files at a time, not the whole plan's.
TEST(Reshard, BuildingHoldsThePlansOfTheFilesInProgressOnly) {
  test::GptShape g;
  g.layers = 4;
  const StateSpec spec = test::gpt_spec(g);
  ScratchDir dir;
  const Layout a{2, 2, 2, 1};
  test::write_synthetic_checkpoint(dir / "a", spec, a);
  const std::vector<SafetensorsHeader> headers = read_headers(dir / "a", read_index(dir / "a"), false);
  for (const Layout& b : {Layout{8, 1, 1, 1}, Layout{2, 1, 4, 3}, Layout{2, 2, 2, 0}}) {
    SCOPED_TRACE(to_string(a) + " -> " + to_string(b));
    const ReshardPlan whole = plan_reshard(spec, a, headers, b);
    std::uint64_t total = 0, largest = 0;
    for (const auto& file : whole.files) {
      total += file->ops.size();
      largest = std::max<std::uint64_t>(largest, file->ops.size());
    }
    ASSERT_GE(whole.files.size(), 4u);
    for (int threads : {1, 2}) {
      const std::string to = dir / fmt::format("{}.{}", to_string(b), threads);
      const ReshardSummary s = reshard_checkpoint(dir / "a", to, b, {threads, false, {}});
      expect_assembled(to, spec, b);
      EXPECT_EQ(s.bytes_read, whole.bytes);
      EXPECT_LE(s.most_ops_held, static_cast<std::uint64_t>(threads + 1) * largest) << threads << " threads";
      if (threads == 1) {
        EXPECT_EQ(s.most_ops_held, largest);
      }
      EXPECT_LT(s.most_ops_held, total) << threads << " threads";
    }
  }
}

// Files planned in any order, one at a time, get the reads the whole plan gives them; the
// pieces a TP and PP coordinate's files share are found again once dropped.
TEST(Reshard, FilesPlannedOneByOneInAnyOrderGetTheReadsOfTheWholePlan) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 12; ++trial) {
    const test::GptShape g = small_shape(rng, trial);
    const StateSpec spec = test::gpt_spec(g);
    const Layout a = random_layout(rng, g);
    Layout b = random_layout(rng, g);
    b.dp *= 2;
    RankNodes nodes;
    if (trial % 2 != 0) nodes = {block_nodes(a.ranks(), 2), block_nodes(b.ranks(), 2)};
    SCOPED_TRACE(fmt::format("trial {}: {} -> {}", trial, to_string(a), to_string(b)));
    const std::vector<SafetensorsHeader> headers = synthetic_headers(spec, a, trial % 3 == 0);
    const ReshardPlan whole = plan_reshard(spec, a, headers, b, nodes);
    std::vector<int> all(static_cast<std::size_t>(b.ranks()));
    for (int r = 0; r < b.ranks(); ++r) all[static_cast<std::size_t>(r)] = r;
    const FilePlanner planner(spec, a, headers, b, nodes, all);
    std::vector<std::size_t> order(planner.file_count());
    for (std::size_t f = 0; f < order.size(); ++f) order[f] = f;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int> seen;
    for (std::size_t f : order) {
      const ReshardPlan part = planner.plan(f);
      ASSERT_EQ(part.ranks.size(), planner.ranks_of(f).size());
      for (const RankPlan& got : part.ranks) {
        seen.push_back(got.rank);
        const RankPlan& want = whole.rank(got.rank);
        ASSERT_TRUE(std::equal(got.tensors.begin(), got.tensors.end(), want.tensors.begin(), want.tensors.end(), same_decl))
            << "rank " << got.rank;
        ASSERT_TRUE(std::equal(got.ops.begin(), got.ops.end(), want.ops.begin(), want.ops.end(), same_op))
            << "rank " << got.rank;
      }
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, all);  // every new rank in exactly one file
  }
}

TEST(Reshard, MismatchedLayoutsAndBadTargetsAreClearErrors) {
  test::GptShape g;
  const StateSpec spec = test::gpt_spec(g);
  ScratchDir dir;
  test::write_synthetic_checkpoint(dir / "a", spec, Layout{2, 2, 1, 1});
  const CheckpointIndex index = read_index(dir / "a");
  const std::vector<SafetensorsHeader> headers = read_headers(dir / "a", index, true);
  // The files do not hold what another layout needs.
  try {
    plan_reshard(spec, Layout{4, 1, 1, 1}, headers, Layout{1, 1, 1, 0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("old rank 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_reshard(spec, Layout{2, 2, 1, 1}, headers, Layout{1, 3, 1, 0}), Error);  // 3 does not divide 16
  EXPECT_THROW(plan_reshard(spec, Layout{2, 2, 1, 1}, headers, Layout{1, 1, 9, 0}), Error);  // more stages than layers
  EXPECT_THROW(reshard_checkpoint(dir / "a", dir / "a", Layout{1, 1, 1, 0}), Error);         // never overwrite
  EXPECT_FALSE(fs::exists(dir / "a.partial"));
  // A checkpoint named like the stage of the new one: clearing the stage would delete it.
  fs::rename(dir / "a", dir / "c.partial");
  try {
    reshard_checkpoint(dir / "c.partial", dir / "c", Layout{1, 1, 1, 0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is the staging folder of"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir / "c.partial/index.json"));
  EXPECT_FALSE(fs::exists(dir / "c"));
  // A checkpoint named like another's stage or lock: the next writer of "c" would remove
  // it as a crash's stage, committed or not.
  for (const char* name : {"d.partial", "d.partial/", "d.partial.lock"}) {
    try {
      reshard_checkpoint(dir / "c.partial", dir / name, Layout{1, 1, 1, 0});
      FAIL() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("may not end in .partial or .partial.lock"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(dir / "d.partial"));
  EXPECT_FALSE(fs::exists(dir / "d.partial.partial"));
  EXPECT_FALSE(fs::exists(dir / "d.partial.partial.lock"));
}

// Review of the state code: a reshard holds every old rank's file open, and a checkpoint
// of 1,024 ranks failed under the usual soft limit of 1,024 open files ("Too many open
// files"). The soft limit is raised toward the hard one first.
TEST(Reshard, MoreOldRanksThanTheSoftLimitOnOpenFilesAreResharded) {
  struct rlimit before {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  constexpr int kRanks = 96;
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < 2 * kRanks + 64)
    GTEST_SKIP() << "the hard limit on open files is " << before.rlim_max;
  const StateSpec spec = test::gpt_spec({});
  ScratchDir dir;
  test::write_synthetic_checkpoint(dir / "a", spec, Layout{kRanks, 1, 1, 1});
  struct rlimit low = before;
  low.rlim_cur = kRanks / 2;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::string error;
  try {
    reshard_checkpoint(dir / "a", dir / "b", Layout{1, 1, 1, 0});
  } catch (const Error& e) {
    error = e.what();
  }
  struct rlimit after {};
  ::getrlimit(RLIMIT_NOFILE, &after);
  ::setrlimit(RLIMIT_NOFILE, &before);
  EXPECT_EQ(error, "");
  EXPECT_GE(after.rlim_cur, rlim_t{kRanks});
  EXPECT_NO_THROW(verify_files(dir / "b", read_index(dir / "b")));
}

TEST(Reshard, ACorruptedOldFileIsRefusedAndNothingIsWritten) {
  test::GptShape g;
  const StateSpec spec = test::gpt_spec(g);
  ScratchDir dir;
  test::write_synthetic_checkpoint(dir / "a", spec, Layout{2, 1, 1, 0});
  {
    std::fstream f(dir / "a/" + rank_file_name(1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  try {
    reshard_checkpoint(dir / "a", dir / "b", Layout{1, 1, 1, 0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "b"));
  EXPECT_FALSE(fs::exists(dir / "b.partial"));
  // Truncated: the size no longer matches the index.
  fs::resize_file(dir / "a/" + rank_file_name(0), 10);
  EXPECT_THROW(reshard_checkpoint(dir / "a", dir / "b", Layout{1, 1, 1, 0}, {0, false, {}}), Error);
}

// Rewrites `dir`/index.json with `edit` applied to its JSON (index.json has no checksum).
template <typename Edit>
void edit_index(const std::string& dir, Edit edit) {
  const std::string path = dir + "/index.json";
  nlohmann::json j;
  {
    std::ifstream in(path);
    j = nlohmann::json::parse(in);
  }
  edit(j);
  std::ofstream(path) << j.dump(1) << '\n';
}

// reshard_checkpoint from `from` to `to` fails with a message holding `expected`, as does
// the plan alone, and writes nothing.
void expect_refused(const ScratchDir& dir, const std::string& from, const Layout& to, const std::string& expected) {
  const std::string target = dir / (from + ".new");
  try {
    reshard_checkpoint(dir / from, target, to);
    ADD_FAILURE() << from << ": no error, expected " << expected;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir / from + "/index.json"), std::string::npos) << e.what();
  }
  try {  // what `morph reshard --plan-only` plans from; read_index refuses a spec that lies about its layers
    read_headers(dir / from, read_index(dir / from), true);
    ADD_FAILURE() << from << ": read_headers passed, expected " << expected;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(target + ".partial"));
}

TEST(Reshard, AnIndexWhoseSpecLiesAboutItsTensorsIsRefusedAndNothingIsWritten) {
  test::GptShape g;
  g.layers = 2;
  const StateSpec spec = test::gpt_spec(g);
  ScratchDir dir;
  for (const char* name : {"layers", "gap", "swapped", "dropped"})
    test::write_synthetic_checkpoint(dir / name, spec, Layout{1, 1, 1, 0});
  const Layout pp2{1, 1, 2, 0};
  // The honest index passes.
  EXPECT_NO_THROW(read_headers(dir / "layers", read_index(dir / "layers"), true));
  // Issue 10 item 9: 2 layers claimed as 1,000,000 would put every real layer on stage 0.
  edit_index(dir / "layers", [](nlohmann::json& j) { j["spec"]["layers"] = 1000000; });
  expect_refused(dir, "layers", pp2, "index.json: spec.layers=1000000 but the tensors hold layers 0-1");
  // Layer 1's parameters moved to layer 2 of 3: layer 1 holds nothing.
  edit_index(dir / "gap", [](nlohmann::json& j) {
    j["spec"]["layers"] = 3;
    for (nlohmann::json& p : j["spec"]["params"])
      if (p.value("layer", -1) == 1) p["layer"] = 2;
  });
  expect_refused(dir, "gap", pp2, "spec.layers=3 but no tensor holds layer 1");
  // One parameter of layer 1 said to be of layer 0.
  edit_index(dir / "swapped", [](nlohmann::json& j) {
    for (nlohmann::json& p : j["spec"]["params"])
      if (p["name"] == "layers.1.input_layernorm.weight") p["layer"] = 0;
  });
  expect_refused(dir, "swapped", pp2,
                 "spec.params[9].layer=0 but its name 'layers.1.input_layernorm.weight' does not contain 0");
  // Layer 1 left out of the spec: a reshard to dp=2 would silently drop its tensors.
  edit_index(dir / "dropped", [](nlohmann::json& j) {
    j["spec"]["layers"] = 1;
    nlohmann::json kept = nlohmann::json::array();
    for (const nlohmann::json& p : j["spec"]["params"])
      if (p.value("layer", -1) != 1) kept.push_back(p);
    j["spec"]["params"] = kept;
  });
  expect_refused(dir, "dropped", Layout{2, 1, 1, 0}, "rank_00000.safetensors holds tensor 'layers.1.");
}

// Review of the state code: the planner looked each tensor a rank needs up by name, so a
// file holding more passed (with colliding names, one tensor served two). Its count must
// be the layout's.
TEST(Reshard, AnOldFileHoldingMoreTensorsThanItsRankNeedsIsRefused) {
  const StateSpec spec = test::gpt_spec({});
  ScratchDir dir;
  const Layout a{2, 1, 1, 0};
  test::write_synthetic_checkpoint(dir / "a", spec, a);
  std::vector<SafetensorsHeader> headers = read_headers(dir / "a", read_index(dir / "a"), true);
  const std::size_t needed = rank_tensors(spec, a, 1).size();
  ASSERT_EQ(headers[1].tensors.size(), needed);
  TensorEntry stray = headers[1].tensors.back();
  stray.name = "stray";
  stray.begin = stray.end;
  headers[1].tensors.push_back(stray);
  try {
    plan_reshard(spec, a, headers, Layout{1, 1, 1, 0});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("old rank 1 under dp=2,tp=1,pp=1,zero=0: its file holds {} tensors, "
                                                 "the layout places {} on it",
                                                 needed + 1, needed));
  }
}

// The tensors of each file against those the layout places on its rank, names, dtypes and
// shapes, before any rank's segments are computed: a row-parallel weight of 4 million rows
// at tp=2 is 4 million segments per shard, which a file of another shape no longer costs.
TEST(Checkpoint, FileTensorsOfAnotherShapeOrDtypeOrMissingAreRefusedNamingTheFile) {
  const StateSpec spec = test::gpt_spec({});
  ScratchDir dir;
  const Layout a{2, 1, 1, 0};
  test::write_synthetic_checkpoint(dir / "a", spec, a);
  const CheckpointIndex index = read_index(dir / "a");
  const std::vector<SafetensorsHeader> good = read_headers(dir / "a", index, true);
  const std::string where = dir / "a/index.json: rank_00001.safetensors: old rank 1 under dp=2,tp=1,pp=1,zero=0: "
                                  "tensor 'embedding.position_embeddings.weight' ";
  auto error_of = [&](const std::function<void(SafetensorsHeader&)>& edit) {
    std::vector<SafetensorsHeader> headers = good;
    edit(headers[1]);
    try {
      verify_contents(dir / "a", index, headers);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of([](SafetensorsHeader&) {}), "no error");
  EXPECT_EQ(error_of([](SafetensorsHeader& h) { h.tensors[1].shape = {16, 8}; }),
            where + "is F64 [16, 8] in its file; the layout needs F64 [8, 16]");
  EXPECT_EQ(error_of([](SafetensorsHeader& h) { h.tensors[1].dtype = Dtype::f32; }),
            where + "is F32 [8, 16] in its file; the layout needs F64 [8, 16]");
  EXPECT_EQ(error_of([](SafetensorsHeader& h) { h.tensors.erase(h.tensors.begin() + 1); }),
            where + "is missing from its file");

  // A long row-parallel weight whose files hold another shape: refused before its rows are
  // cut into segments.
  CheckpointIndex rows;
  rows.layout = Layout{1, 2, 1, 0};
  rows.spec.layers = 1;
  rows.spec.params = {{"x", {std::int64_t{1} << 22, 2}, Dtype::i8, Split::row, Stage::first, -1}};
  SafetensorsHeader narrow;
  narrow.tensors = {{"x", Dtype::i8, {1, 1}, 0, 1}};
  try {
    verify_contents(dir / "rows", rows, {narrow, narrow});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir / "rows/index.json: rank_00000.safetensors: old rank 0 under "
                                           "dp=1,tp=2,pp=1,zero=0: tensor 'x' is I8 [1, 1] in its file; the layout "
                                           "needs I8 [4194304, 1]");
  }
}

// An index.json of the wrong shape is a morph::Error naming the file (the launcher skips
// such a checkpoint rather than aborting), whichever member is wrong.
TEST(Checkpoint, AMalformedIndexIsAnErrorNamingItsFile) {
  const StateSpec spec = test::gpt_spec({});
  ScratchDir dir;
  test::write_synthetic_checkpoint(dir / "a", spec, Layout{2, 1, 1, 0});
  const std::string good = [&] {
    std::ifstream in(dir / "a/index.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& j) { j["format"] = 1; }, "not a morph-checkpoint/1 index"},
      {[](nlohmann::json& j) { j.erase("layout"); }, "not a morph-checkpoint/1 index"},
      {[](nlohmann::json& j) { j = nlohmann::json::array(); }, "not a morph-checkpoint/1 index"},
      {[](nlohmann::json& j) { j["spec"]["params"][0]["shape"] = {0}; }, "dimension 0 is out of range"},
      {[](nlohmann::json& j) { j["layout"]["tp"] = 3; }, "does not divide"},
      {[](nlohmann::json& j) { j["progress"] = 7; }, "progress must hold unsigned step and samples"},
      {[](nlohmann::json& j) { j["spec"]["params"][0]["shape"] = {1LL << 36, 2}; }, "more than the"},
      {[](nlohmann::json& j) {  // two parameters that ZeRO 0 stores as one tensor
         j["spec"]["params"][0]["name"] = "w";
         j["spec"]["params"][1]["name"] = "optim.exp_avg.w";
       },
       "state: tensor 'optim.exp_avg.w' is both parameter 'optim.exp_avg.w' and state 'exp_avg' of parameter 'w'"},
  };
  for (const auto& [edit, expected] : cases) {
    std::ofstream(dir / "a/index.json") << good;
    edit_index(dir / "a", edit);
    try {
      read_index(dir / "a");
      ADD_FAILURE() << "no error, expected " << expected;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(dir / "a/index.json", 0), 0u) << e.what();
    }
  }
}

// A folder made at the target while a checkpoint was being staged is not replaced by the
// commit (rename(2) alone would replace an empty one).
TEST(Checkpoint, ACommitNeverReplacesAFolderMadeSinceTheStageBegan) {
  const StateSpec spec = test::gpt_spec({});
  ScratchDir dir;
  test::write_synthetic_checkpoint(dir / "a", spec, Layout{1, 1, 1, 0});
  const CheckpointIndex index = read_index(dir / "a");
  CheckpointStage stage(dir / "b");
  fs::copy_file(dir / "a/" + rank_file_name(0), stage.file_path(0));
  fs::create_directory(dir / "b");
  try {
    stage.commit(index, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a checkpoint is never overwritten"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir / "b"));
}

TEST(Layout, ParsesRanksAndStages) {
  const Layout l = parse_layout("dp=2,tp=4,pp=3,zero=1", "--layout");
  EXPECT_EQ(l.ranks(), 24);
  const RankCoords c = coords_of(l, 13);  // rank = pp*8 + dp*4 + tp
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.dp, 1);
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(rank_of(l, c), 13);
  EXPECT_THROW(parse_layout("dp=2,ep=4", "--layout"), Error);
  EXPECT_THROW(parse_layout("zero=4", "--layout"), Error);
  EXPECT_THROW(parse_layout("dp=0", "--layout"), Error);
  try {
    parse_layout("dp=2,tp=2,dp=4", "--layout");
    FAIL() << "the second dp= won";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--layout: 'dp' given twice in 'dp=2,tp=2,dp=4'");
  }
  test::GptShape g;
  g.layers = 5;
  const StateSpec spec = test::gpt_spec(g);
  const Layout p3{1, 1, 3, 0};
  EXPECT_EQ(first_layer(spec, p3, 0), 0);
  EXPECT_EQ(first_layer(spec, p3, 1), 1);  // 5 * 1 / 3
  EXPECT_EQ(first_layer(spec, p3, 2), 3);
  EXPECT_EQ(end_layer(spec, p3, 2), 5);
  EXPECT_EQ(padded_rows(spec, 50, 2), 56);  // multiple of 4 * 2
}

TEST(ShardMap, DataParallelReplicasHoldTheirReplicatedTensorsAlike) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    test::GptShape g;
    g.layers = std::uniform_int_distribution<int>(1, 4)(rng);
    g.hidden = 8;
    g.vocab = 37;
    const StateSpec spec = test::gpt_spec(g);
    Layout l = random_layout(rng, g);
    l.dp = 3;
    SCOPED_TRACE(to_string(l));
    for (int r = 0; r < l.ranks(); ++r) {
      const RankCoords c = coords_of(l, r);
      const std::vector<LocalTensor> mine = rank_tensors(spec, l, r);
      const std::vector<LocalTensor> first = rank_tensors(spec, l, rank_of(l, {0, c.tp, c.pp}));
      const std::size_t alike = replicated_tensor_count(spec, l, r);
      ASSERT_LE(alike, mine.size());
      EXPECT_EQ(alike == mine.size(), l.zero == 0);
      EXPECT_EQ(alike == 0, l.zero == 3 || mine.empty());
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const bool same = same_decl(mine[i].decl, first[i].decl) &&
                          std::equal(mine[i].segments.begin(), mine[i].segments.end(), first[i].segments.begin(),
                                     first[i].segments.end(), [](const Segment& x, const Segment& y) {
                                       return x.global == y.global && x.start == y.start && x.count == y.count;
                                     });
        EXPECT_EQ(same, i < alike || c.dp == 0) << "rank " << r << " tensor " << mine[i].decl.name;
      }
    }
  }
}

// Element by element: (global tensor, element), or (-1, 0) for a zero.
std::vector<std::pair<int, std::uint64_t>> elements_of(const std::vector<Segment>& segments) {
  std::vector<std::pair<int, std::uint64_t>> out;
  for (const Segment& s : segments)
    for (std::uint64_t k = 0; k < s.count; ++k) out.emplace_back(s.global, s.global < 0 ? 0 : s.start + k);
  return out;
}

// A rank's ZeRO chunk is found by its offset in the flattening of its TP and PP
// coordinate: the chunks of the data-parallel ranks, one after the other, are the TP
// shards that the same coordinate holds without ZeRO, in spec order, then zeros; every
// rank's file holds its group's tensors.
TEST(ShardMap, ZeroChunksFoundByOffsetCutTheFlatteningInOrder) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 30; ++trial) {
    const test::GptShape g = small_shape(rng, trial);
    const StateSpec spec = test::gpt_spec(g);
    Layout l = random_layout(rng, g);
    l.dp = std::uniform_int_distribution<int>(1, 7)(rng);
    Layout plain = l;  // its tensors: the parameters' shards, then each optimizer state's
    plain.dp = 1;
    plain.zero = 0;
    SCOPED_TRACE(to_string(l));
    for (int pp = 0; pp < l.pp; ++pp)
      for (int tp = 0; tp < l.tp; ++tp) {
        const DataParallelTensors group = data_parallel_tensors(spec, l, tp, pp);
        const std::vector<LocalTensor> shards = rank_tensors(spec, plain, rank_of(plain, {0, tp, pp}));
        EXPECT_EQ(group.replicated.size(), replicated_tensor_count(spec, l, rank_of(l, {0, tp, pp})));
        EXPECT_EQ(group.partitioned.size(), l.zero == 0 ? 0u : spec.optimizer.size() + (l.zero == 3 ? 1 : 0));
        for (const ZeroPartition& z : group.partitioned) {
          std::vector<std::pair<int, std::uint64_t>> chunks;
          for (int dp = 0; dp < l.dp; ++dp) {
            const std::vector<std::pair<int, std::uint64_t>> chunk = elements_of(z.chunk(spec, l, dp));
            EXPECT_EQ(chunk.size(), static_cast<std::uint64_t>(z.decl.shape[0])) << z.decl.name << " chunk " << dp;
            chunks.insert(chunks.end(), chunk.begin(), chunk.end());
          }
          std::vector<std::pair<int, std::uint64_t>> flat;  // "params.flat": the parameters; "optim.S": S's
          for (const LocalTensor& t : shards) {
            const bool state = t.decl.name.rfind("optim.", 0) == 0;
            if (z.decl.name == "params.flat" ? !state : t.decl.name.rfind(z.decl.name + ".", 0) == 0) {
              const std::vector<std::pair<int, std::uint64_t>> e = elements_of(t.segments);
              flat.insert(flat.end(), e.begin(), e.end());
            }
          }
          ASSERT_LT(chunks.size() - flat.size(), static_cast<std::size_t>(l.dp)) << z.decl.name;
          flat.resize(chunks.size(), {-1, 0});
          EXPECT_EQ(chunks, flat) << z.decl.name;
        }
        for (int dp = 0; dp < l.dp; ++dp) {
          const std::vector<LocalTensor> mine = rank_tensors(spec, l, rank_of(l, {dp, tp, pp}));
          ASSERT_EQ(mine.size(), group.replicated.size() + group.partitioned.size());
          for (std::size_t i = 0; i < mine.size(); ++i)
            EXPECT_TRUE(same_decl(mine[i].decl, i < group.replicated.size()
                                                    ? group.replicated[i].decl
                                                    : group.partitioned[i - group.replicated.size()].decl))
                << mine[i].decl.name;
        }
      }
  }
}

TEST(ShardMap, MegatronShapesAtOneTwoAndFourWays) {
  // ARCHITECTURE.md's GPT facts (hidden 1536, vocabulary 50257 padded to 128 t).
  StateSpec spec;
  spec.layers = 1;
  spec.optimizer = {};
  spec.params = {
      {"embedding.word_embeddings.weight", {50257, 1536}, Dtype::f32, Split::vocab, Stage::first, -1},
      {"layers.0.self_attention.query_key_value.weight", {4608, 1536}, Dtype::f32, Split::column, Stage::layer, 0},
      {"layers.0.self_attention.dense.weight", {1536, 1536}, Dtype::f32, Split::row, Stage::layer, 0},
      {"layers.0.mlp.dense_h_to_4h.weight", {6144, 1536}, Dtype::f32, Split::column, Stage::layer, 0},
      {"layers.0.mlp.dense_4h_to_h.weight", {1536, 6144}, Dtype::f32, Split::row, Stage::layer, 0}};
  const std::vector<std::vector<std::vector<std::int64_t>>> expected{
      {{50304, 1536}, {4608, 1536}, {1536, 1536}, {6144, 1536}, {1536, 6144}},
      {{25216, 1536}, {2304, 1536}, {1536, 768}, {3072, 1536}, {1536, 3072}},
      {{12672, 1536}, {1152, 1536}, {1536, 384}, {1536, 1536}, {1536, 1536}}};
  int i = 0;
  for (int t : {1, 2, 4}) {
    const std::vector<LocalTensor> local = rank_tensors(spec, Layout{1, t, 1, 0}, 0);
    ASSERT_EQ(local.size(), 5u);
    for (std::size_t k = 0; k < local.size(); ++k) EXPECT_EQ(local[k].decl.shape, expected[i][k]) << t << " " << k;
    ++i;
  }
}

}  // namespace
}  // namespace morph::state
