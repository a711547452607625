// The reconfiguration plan from one layout to another (Tenplex §4.2): for each new rank,
// the byte ranges of old files that form its file, each destination byte read exactly
// once, from a copy on the destination's own node where one exists. Zeros (padding) need
// no reads: new files start zero-filled.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "libmorph/state/layout.h"
#include "libmorph/state/shard_map.h"

namespace morph::state {

struct CopyOp {
  int source_rank = 0;
  std::uint64_t source_offset = 0;  // byte offset in the source file
  int tensor = 0;                   // index into RankPlan::tensors
  std::uint64_t offset = 0;         // byte offset in that tensor's data
  std::uint64_t bytes = 0;
};

// The tensors of one new file and the reads that fill them. Data-parallel replicas (new
// ranks of one TP and PP coordinate without ZeRO, on one node) hold identical files and
// share one FilePlan, planned once.
struct FilePlan {
  std::vector<TensorDecl> tensors;  // the file's tensors, in order
  std::vector<CopyOp> ops;          // sorted by destination; adjacent runs merged
};

// New rank `rank`'s file: views into its FilePlan, valid while the ReshardPlan lives.
struct RankPlan {
  int rank = 0;
  std::span<const TensorDecl> tensors;
  std::span<const CopyOp> ops;
};

struct ReshardPlan {
  Layout from;
  Layout to;
  std::vector<RankPlan> ranks;                         // the ranks planned, in increasing order
  std::vector<std::shared_ptr<const FilePlan>> files;  // what `ranks` view, one per replica group
  // Over the ranks planned, each replica counted:
  std::map<std::pair<std::string, std::string>, std::uint64_t> bytes_between_nodes;  // (from node, to node)
  std::uint64_t bytes = 0;  // read and written (zeros excluded)

  // New rank `rank`'s plan; throws naming the rank when it was not planned.
  const RankPlan& rank(int rank) const;
};

// Where ranks run, for locality: node of rank r = nodes[r]; empty: all on one node.
struct RankNodes {
  std::vector<std::string> from;
  std::vector<std::string> to;
};

// `sources[r]`: the header of old rank r's file, checked against what `from` says it must
// hold (names, dtypes, shapes); a mismatch is an error naming the rank and tensor. Plans
// every new rank.
ReshardPlan plan_reshard(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes = {});

// The same plan for the new ranks `ranks` only (any order; repeats ignored): a process
// plans the files it builds. Each RankPlan is the one the whole plan has for that rank,
// since a file's reads depend on its own rank and node only.
ReshardPlan plan_reshard(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
                         const Layout& to, const RankNodes& nodes, const std::vector<int>& ranks);

// Plans the files of some new ranks one at a time from one index of the old files, so that
// a builder holds only the plans of the files it is writing: plan_reshard() is the union
// of its plans. Files are numbered TP and PP coordinate by coordinate, in the order that
// holds least: the pieces a coordinate's files share are kept from its first file planned
// to its last. plan() may be called from several threads at once.
class FilePlanner {
 public:
  // Checks and indexes `sources` as plan_reshard() does; `spec` must outlive the planner.
  FilePlanner(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
              const Layout& to, const RankNodes& nodes, const std::vector<int>& ranks);
  // Every new rank.
  FilePlanner(const StateSpec& spec, const Layout& from, const std::vector<SafetensorsHeader>& sources,
              const Layout& to, const RankNodes& nodes);
  ~FilePlanner();
  FilePlanner(const FilePlanner&) = delete;
  FilePlanner& operator=(const FilePlanner&) = delete;

  const Layout& from() const;
  const Layout& to() const;
  std::size_t file_count() const;
  // The new ranks (data-parallel replicas) that hold file `file`, increasing.
  const std::vector<int>& ranks_of(std::size_t file) const;
  // The plan of file `file`'s ranks: plan_reshard(..., ranks_of(file)).
  ReshardPlan plan(std::size_t file) const;
  // The most copy operations that plans made here held at one time, however long they
  // were kept (by anyone).
  std::uint64_t most_ops_held() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace morph::state
